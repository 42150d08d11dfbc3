//! Error types shared by the stages. User-input errors map to exit code 2.

use thiserror::Error;

/// An error in what the user gave us: a trace line, a flag, a JSON argument, a spec key.
/// The message names where (file:line, flag, key path) and what was expected.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{0}")]
pub struct InputError(String);

impl InputError {
    pub fn new(msg: impl Into<String>) -> Self {
        InputError(msg.into())
    }

    /// The same error with `origin` (a flag, a spec key path, a file) in front of its message.
    pub fn with_origin(self, origin: impl std::fmt::Display) -> Self {
        InputError(format!("{origin}: {}", self.0))
    }
}

/// An error raised while simulating a (valid) configuration, e.g. the dead-end guard.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{0}")]
pub struct SimError(pub String);
