//! What makes a CSV file unreadable as a dataset, said with the column and the value; the
//! reader adds the file and the line ([`DataError::Format`](super::DataError::Format)).

/// A column or a cell of a CSV file that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum CsvError {
    /// A column index (`data.label_column = 7`) past the file's columns.
    #[error("{key} = {index} is out of range for {width} columns")]
    OutOfRange {
        /// The config key that names the column.
        key: String,
        /// The index written.
        index: i64,
        /// The file's columns.
        width: usize,
    },
    /// A column named where the file has no header row.
    #[error("{key} = \"{name}\" needs a header row, and this file has none")]
    NoHeader {
        /// The config key that names the column.
        key: String,
        /// The name written.
        name: String,
    },
    /// A column name the header does not have.
    #[error("no column named \"{name}\" (columns: {columns})")]
    NoSuchColumn {
        /// The name written.
        name: String,
        /// The header's names, joined.
        columns: String,
    },
    /// A row with another number of columns than the first.
    #[error("expected {width} columns like the first row, got {got}")]
    Width {
        /// The first row's columns.
        width: usize,
        /// This row's.
        got: usize,
    },
    /// A class label that is not a whole number >= 0.
    #[error("{column}: label must be a non-negative integer, got \"{cell}\"")]
    Label {
        /// `column 2 ("price")`.
        column: String,
        /// The cell as written.
        cell: String,
    },
    /// A regression target that is not a finite number.
    #[error("{column}: target must be a finite number, got \"{cell}\"")]
    Target {
        /// `column 2 ("price")`.
        column: String,
        /// The cell as written.
        cell: String,
    },
    /// A feature that is not a finite number.
    #[error("{column}: expected a finite number, got \"{cell}\"")]
    Feature {
        /// `column 2 ("price")`.
        column: String,
        /// The cell as written.
        cell: String,
    },
}
