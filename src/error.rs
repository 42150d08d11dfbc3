//! Error types shared by the stages. User-input errors map to exit code 2.

use thiserror::Error;

/// An error in what the user gave us: a trace line, a flag, a JSON argument, a spec key.
/// The message names where (file:line, flag, key path) and what was expected.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{0}")]
pub struct InputError(pub String, pub InputErrorKind);

/// What kind of input problem an [`InputError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InputErrorKind {
    /// A bad flag, key, file or value.
    #[default]
    Input,
    /// Well-formed settings that the timing model cannot build for this configuration (AIC:
    /// `num_heads 64 should be divisible by tp_size 3`, no memory left for the KV cache): a
    /// sweep lists such a point as `invalid` and runs the others.
    Unbuildable,
}

impl InputError {
    pub fn new(msg: impl Into<String>) -> Self {
        InputError(msg.into(), InputErrorKind::Input)
    }

    /// An [`InputErrorKind::Unbuildable`] error.
    pub fn unbuildable(msg: impl Into<String>) -> Self {
        InputError(msg.into(), InputErrorKind::Unbuildable)
    }

    /// The same kind of error with its message rewritten (a prefix naming where, ...).
    pub fn map_message(self, f: impl FnOnce(String) -> String) -> Self {
        InputError(f(self.0), self.1)
    }

    pub fn is_unbuildable(&self) -> bool {
        self.1 == InputErrorKind::Unbuildable
    }
}

/// An error raised while simulating a (valid) configuration, e.g. the dead-end guard.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{0}")]
pub struct SimError(pub String);
