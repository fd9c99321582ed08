//! An epoch's figures, as a loop gives them for the epoch's snapshot.

use std::collections::BTreeMap;

use crate::config::Monitor;
use crate::memory::Footprint;
use crate::record::{Pace, Snapshot};

/// An epoch's figures for its snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EpochFigures {
    /// Mean training loss.
    pub loss: Option<f64>,
    /// Mean validation loss.
    pub val_loss: Option<f64>,
    /// Training samples per second.
    pub samples_per_sec: Option<f64>,
    /// With loss scaling: the scale now, and the steps skipped this epoch.
    pub loss_scale: Option<(f64, u64)>,
    /// The learning rate of the epoch's last step.
    pub lr: Option<f64>,
    /// With gradient clipping: the steps clipped this epoch.
    pub clipped_steps: Option<u64>,
    /// Metrics by key (`val_accuracy`, `train_mae`, ...).
    pub metrics: BTreeMap<String, f64>,
    /// What the run's tensors hold by kind, for the snapshot's `breakdown`.
    pub footprint: Option<Footprint>,
    /// The steps' times and waits for the device, for the snapshot's `pace`.
    pub pace: Option<Pace>,
}

impl EpochFigures {
    /// A figure by its snapshot key: `val_loss`, or a metric's (`val_accuracy`, ...).
    pub(crate) fn get(&self, key: &str) -> Option<f64> {
        Monitor::value_of(key, self.val_loss, |key| self.metrics.get(key).copied())
    }

    /// The validation figures given, by key: what early stopping may watch.
    pub(crate) fn validation_keys(&self) -> Vec<String> {
        let metrics = (self.metrics.keys()).filter(|k| Monitor::is_validation(k));
        (self.val_loss.map(|_| "val_loss".to_string()))
            .into_iter()
            .chain(metrics.cloned())
            .collect()
    }

    /// Writes the figures into the epoch's snapshot `s` (the breakdown, which needs the
    /// epoch's peaks by phase, is the recorder's).
    pub(super) fn fill(self, s: &mut Snapshot) {
        s.loss = self.loss;
        s.val_loss = self.val_loss;
        s.samples_per_sec = self.samples_per_sec;
        s.lr = self.lr;
        s.clipped_steps = self.clipped_steps;
        s.pace = self.pace;
        if let Some((scale, skipped)) = self.loss_scale {
            s.loss_scale = Some(scale);
            s.skipped_steps = Some(skipped);
        }
        s.metrics = self
            .metrics
            .into_iter()
            .map(|(k, v)| (k, Some(v)))
            .collect();
    }
}
