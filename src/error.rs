//! Error types shared by the stages. User-input errors map to exit code 2.

use thiserror::Error;

/// An error in what the user gave us: a trace line, a flag, a JSON argument, a spec key.
/// The message names where (file:line, flag, key path) and what was expected.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{0}")]
pub struct InputError(String, InputErrorKind);

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

    pub fn is_unbuildable(&self) -> bool {
        self.1 == InputErrorKind::Unbuildable
    }

    /// The same error (of the same kind) with `origin` (a flag, a spec key path, a file) in
    /// front of its message.
    pub fn with_origin(self, origin: impl std::fmt::Display) -> Self {
        InputError(format!("{origin}: {}", self.0), self.1)
    }
}

/// An error raised while simulating a (valid) configuration. Callers match on the kind: a sweep
/// lists a dead end as a `stalled` point and anything else as `failed`.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum SimError {
    /// The simulation cannot make progress: queued requests that can never be scheduled (DynoSim
    /// stops the same way). The message names the worker, the time and the cause.
    #[error("{0}")]
    DeadEnd(String),
    /// A configuration the simulator cannot set up (a pool without workers, a block count or
    /// size out of range).
    #[error("{0}")]
    BadConfig(String),
}
