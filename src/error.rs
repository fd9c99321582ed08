//! The library's top-level error, and the exit code each kind maps to.

use std::path::{Path, PathBuf};

use crate::backend::BackendError;
use crate::config::ConfigError;
use crate::data::DataError;
use crate::memory::LimitExceeded;

/// Anything that stops a run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The requested device cannot be used.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// The dataset cannot be loaded.
    #[error(transparent)]
    Data(#[from] DataError),
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The memory limit was exceeded (`on_limit = "fail"`, or no smaller micro-batch left).
    #[error(transparent)]
    Limit(#[from] LimitExceeded),
    /// The device reported a failure.
    #[error("device error: {0}")]
    Device(String),
    /// The loss stopped being finite.
    #[error(
        "training diverged: loss is {loss} at step {step} of epoch {epoch}; try a lower train.lr"
    )]
    Diverged {
        /// Epoch (1-based).
        epoch: usize,
        /// Global optimizer step.
        step: usize,
        /// The loss seen.
        loss: f64,
    },
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.as_ref().to_path_buf(),
            source,
        }
    }

    /// The process exit code for this error: 2 for bad input (config, device choice, data
    /// files), 3 for an exceeded memory limit, 1 for everything else.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Config(_) | Error::Backend(_) | Error::Data(_) => 2,
            Error::Limit(_) => 3,
            Error::Io { .. } | Error::Device(_) | Error::Diverged { .. } => 1,
        }
    }
}
