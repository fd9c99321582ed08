//! `[train.early_stopping]`.

use serde::{Deserialize, Serialize};

use super::{Monitor, MonitorMode};

/// `[train.early_stopping]`: the run stops when its monitored figure has not improved for
/// `patience` epochs.
///
/// The file's table reads into it as it is (a key of the table is one field here, its default
/// in [`Default`]); `mode`, whose default depends on `monitor`, is left `None` where the file
/// leaves it out and validation writes it in ([`Self::mode`] reads it either way). The checks
/// beyond types are in `validate/train/early_stopping.rs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub struct EarlyStoppingConfig {
    /// The epoch metric watched: `val_loss` or any `val_<metric>` the task reports (default
    /// `val_loss`).
    pub monitor: String,
    /// Whether lower or higher is better; by default the monitor's own way: higher for an
    /// accuracy, else lower.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<MonitorMode>,
    /// Epochs in a row without improvement after which the run stops (default 3, Lightning's).
    pub patience: usize,
    /// The least change that counts as an improvement (default 0: any).
    pub min_delta: f64,
    /// End the run on the best epoch's weights (`checkpoints/best`), not the last epoch's
    /// (default true).
    pub restore_best: bool,
}

impl EarlyStoppingConfig {
    /// Whether lower or higher is better: `mode`, or the monitor's own way where it is unset.
    pub fn mode(&self) -> MonitorMode {
        let natural = Monitor::natural_mode(&self.monitor);
        self.mode.unwrap_or(natural.unwrap_or(MonitorMode::Min))
    }
}

impl Default for EarlyStoppingConfig {
    /// Every key at its default: `val_loss`, lower is better, Lightning's patience of 3, any
    /// improvement counts, the best weights restored. Set what differs and take the rest from
    /// here (`EarlyStoppingConfig { patience: 2, ..Default::default() }`): a field added later
    /// then breaks nothing, and a `monitor` set alone brings its own mode.
    fn default() -> Self {
        EarlyStoppingConfig {
            monitor: Monitor::VAL_LOSS.into(),
            mode: None,
            patience: 3,
            min_delta: 0.0,
            restore_best: true,
        }
    }
}
