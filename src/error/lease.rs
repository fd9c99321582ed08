//! [`LeaseError`]: why a run could not take its memory lease on its device
//! ([`crate::lease`]): the registry or the budget cannot be used (exit code 2), or the lease
//! does not fit (exit code 3).

/// Why a run could not take its lease.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LeaseError {
    /// The registry, or a file in it, cannot be used. Exit code 2.
    #[error("{}: {message}", path.display())]
    Registry {
        /// The directory or file.
        path: std::path::PathBuf,
        /// What is wrong, on one line.
        message: String,
    },
    /// The budget cannot be used (unreadable, larger than the device, another run's for the
    /// same device). Exit code 2.
    #[error("{origin}: {message}")]
    Budget {
        /// Where it was set.
        origin: String,
        /// What is wrong, on one line.
        message: String,
    },
    /// The run's lease does not fit: larger than the whole budget, or not now with
    /// `memory.wait = false`. Exit code 3.
    #[error("{message}")]
    NoRoom {
        /// What it asked, and who holds what.
        message: String,
    },
}

impl LeaseError {
    /// The registry's `path`, refused with `message`.
    pub(crate) fn registry(path: &std::path::Path, message: impl Into<String>) -> Self {
        LeaseError::Registry {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            LeaseError::Registry { .. } | LeaseError::Budget { .. } => 2,
            LeaseError::NoRoom { .. } => 3,
        }
    }
}
