//! [`ReportError`]: a picture or a report that could not be drawn or written, with where.

use std::path::PathBuf;

/// A picture or report that could not be drawn or written: the file, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {cause}", path.display())]
pub struct ReportError {
    /// The file being drawn or read.
    pub path: PathBuf,
    /// What went wrong, on one line.
    pub cause: String,
}

impl ReportError {
    /// `cause` at `path`.
    pub fn at(path: impl Into<PathBuf>, cause: impl std::fmt::Display) -> Self {
        ReportError {
            path: path.into(),
            cause: cause.to_string(),
        }
    }
}
