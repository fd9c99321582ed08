//! What the memory layer fails with, on its own: `memory/` knows nothing of the crate's
//! [`Error`](crate::Error), which wraps this one.

use burn::tensor::ExecutionError;

/// A failure of the memory layer.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The `[memory]` settings cannot work on this device (the message names the key).
    #[error("{0}")]
    Settings(String),
    /// The device failed while memory was read, reserved or released.
    #[error("{0}")]
    Device(ExecutionError),
}

impl From<ExecutionError> for MemoryError {
    fn from(e: ExecutionError) -> Self {
        MemoryError::Device(e)
    }
}
