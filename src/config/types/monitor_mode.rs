//! [`MonitorMode`]: which way a monitored figure is better, and the comparisons every decision
//! on it makes (early stopping, the plateau schedule, the best checkpoints, a search's ranking
//! and its pruners).

use serde::{Deserialize, Serialize};

/// Which direction of a monitored metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MonitorMode {
    /// Lower is better (losses, errors).
    Min,
    /// Higher is better (accuracy).
    Max,
}

impl MonitorMode {
    /// What the mode means, for people: "lower is better".
    pub fn meaning(self) -> &'static str {
        match self {
            MonitorMode::Min => "lower is better",
            MonitorMode::Max => "higher is better",
        }
    }

    /// `a` against `b`, the better first (`Less` where `a` is better); NaN after every number.
    pub fn order(self, a: f64, b: f64) -> std::cmp::Ordering {
        match self {
            MonitorMode::Min => a.total_cmp(&b),
            MonitorMode::Max => b.total_cmp(&a),
        }
    }

    /// Whether `value` is better than `best` by more than `min_delta` (Keras's rule for early
    /// stopping and ReduceLROnPlateau; a NaN never is).
    pub fn improves(self, value: f64, best: f64, min_delta: f64) -> bool {
        match self {
            MonitorMode::Min => value < best - min_delta,
            MonitorMode::Max => value > best + min_delta,
        }
    }
}
