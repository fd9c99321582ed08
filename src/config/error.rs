//! [`ConfigError`]: what a config says that cannot be used, and where it says it.

use std::fmt;

/// A configuration that cannot be used, located as precisely as possible.
///
/// Displays as one line: `configs/x.toml:7:1: train.batch_size must be > 0, got 0`, or
/// `--set train.batch_size=0: ...` when the value came from the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Where: `file:line:col`, `file`, or `--set key=value`.
    pub origin: String,
    /// The dotted key at fault, when one is known.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.origin, self.message)
    }
}

impl std::error::Error for ConfigError {}
