//! `train.lr` as a file writes it: a number, or a word the command line resolves (`"find"`).

use serde::{Deserialize, Serialize};

/// `train.lr` as written: a rate, or a word (`"find"`: `tidemark train` runs the learning-rate
/// finder first and trains at the rate it suggests).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum RawLr {
    /// A rate.
    Rate(f64),
    /// A word.
    Word(String),
}

impl RawLr {
    /// Whether it asks for the finder.
    pub fn is_find(&self) -> bool {
        matches!(self, RawLr::Word(w) if w == "find")
    }
}
