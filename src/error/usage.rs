//! [`UsageError`]: a command's argument (or the environment variable standing for one) that
//! cannot be used: not a config's key, so not a `ConfigError`. Exit code 2, as bad input.

/// An argument that cannot be used: `--shard 3/2: ...`, `--storage redis://: ...`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{arg}: {message}")]
pub struct UsageError {
    /// The argument as given (`--shard 3/2`), or the variable that stood for it.
    pub arg: String,
    /// What is wrong, on one line.
    pub message: String,
}

impl UsageError {
    /// `arg` refused with `message`.
    pub fn new(arg: impl Into<String>, message: impl Into<String>) -> Self {
        UsageError {
            arg: arg.into(),
            message: message.into(),
        }
    }
}
