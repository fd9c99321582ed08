//! A pruner's record: each trial's monitored value after every epoch it trained, and where it
//! stands. A study rebuilds it from its journal for each decision (`study/rungs.rs`), and a
//! trial's process after each epoch (the median rule compares with the completed trials).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::{Monitor, MonitorMode};
use crate::error::Error;
use crate::record::{current_epochs, read_snapshots};

/// Where a trial stands with the pruner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// Training (or stopped mid-segment by a signal: resumed from its checkpoint).
    Running,
    /// Stopped at an ASHA rung, waiting to be promoted.
    Paused,
    /// Trained to its last epoch (or early stopping's).
    Completed,
    /// Stopped for good by the pruner.
    Pruned,
    /// Stopped by an error.
    Failed,
}

/// One trial's curve and standing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    /// The monitored value after epoch `i + 1`, as the trial's snapshots hold it.
    pub values: Vec<Option<f64>>,
    /// Where it stands.
    pub standing: Standing,
    /// Why it was pruned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Curve {
    /// Epochs trained.
    pub fn epochs(&self) -> usize {
        self.values.len()
    }

    /// Its value after `epoch` epochs (1-based), if it trained that far and it is a number.
    pub fn at(&self, epoch: usize) -> Option<f64> {
        self.values
            .get(epoch.checked_sub(1)?)
            .copied()
            .flatten()
            .filter(|v| v.is_finite())
    }

    /// Its best value over its first `epoch` epochs.
    pub fn best_until(&self, epoch: usize, mode: MonitorMode) -> Option<f64> {
        (1..=epoch)
            .filter_map(|e| self.at(e))
            .reduce(|a, b| better(a, b, mode))
    }
}

/// The better of two values.
pub fn better(a: f64, b: f64, mode: MonitorMode) -> f64 {
    match mode {
        MonitorMode::Min => a.min(b),
        MonitorMode::Max => a.max(b),
    }
}

/// Every trial's curve, by trial number.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The monitored metric.
    pub monitor: String,
    /// The trials that have started, by number.
    pub trials: BTreeMap<usize, Curve>,
}

impl Record {
    /// The trials that completed.
    pub fn completed(&self) -> impl Iterator<Item = &Curve> {
        self.trials
            .values()
            .filter(|c| c.standing == Standing::Completed)
    }
}

/// `monitor`'s value after each epoch of the run in `run_dir`, as its snapshots hold it now
/// (an epoch trained again after a resume counts once, as trained last); none if it has no
/// snapshots yet.
pub fn read_curve(run_dir: &Path, monitor: &str) -> Result<Vec<Option<f64>>, Error> {
    let path = run_dir.join("snapshots.jsonl");
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let snapshots = read_snapshots(&path)?;
    let mut values = Vec::new();
    for s in current_epochs(&snapshots) {
        let value = Monitor::value_of(monitor, s.val_loss, |key| s.metric(key));
        values.resize(s.epoch.saturating_sub(1), None);
        values.push(value);
    }
    Ok(values)
}
