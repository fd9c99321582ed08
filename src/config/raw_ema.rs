//! `[train.ema]` as a file writes it.

use serde::{Deserialize, Serialize};

/// `[train.ema]` as written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawEma {
    /// The average's decay per optimizer step.
    pub decay: Option<f64>,
    /// Optimizer steps before the averaging starts.
    pub start_step: Option<i64>,
    /// `same` or `host`.
    pub device: Option<String>,
    /// `average` or `raw`.
    pub evaluate_with: Option<String>,
}
