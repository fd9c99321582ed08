//! What reading back a run's own files fails with, on its own: `record/` knows nothing of the
//! crate's [`Error`](crate::Error), which wraps this one. A file that is there but cannot be
//! understood is bad input (exit 2), never taken for a file that is absent: a run whose
//! `summary.json` is garbage has not "not run".

use std::path::{Path, PathBuf};

/// A file a run or a search wrote (`summary.json`, `snapshots.jsonl`) that cannot be read back.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The OS refused to read it.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// It was read, and is not what the run writes there.
    #[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The 1-based line, for a file of lines.
        line: Option<usize>,
        /// What is wrong, on one line.
        message: String,
    },
}

impl RecordError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        RecordError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// `path` (at `line`) is not what it should be.
    pub fn corrupt(path: &Path, line: Option<usize>, message: impl std::fmt::Display) -> Self {
        RecordError::Corrupt {
            path: path.to_path_buf(),
            line,
            message: message.to_string(),
        }
    }
}
