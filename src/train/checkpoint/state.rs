//! `meta.json`: where in the run a checkpoint stands, what a resume restores besides the
//! weights and the optimizer, and what a state read back must hold to be gone on from.

use serde::{Deserialize, Serialize};

use crate::task::metrics::HostSums;
use crate::train::decide::EarlyStopState;
use crate::train::precision::LossScaler;

/// `meta.json`: where in the run a checkpoint stands, and what a resume restores besides the
/// weights and the optimizer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckpointState {
    /// Epochs completed.
    pub epoch: usize,
    /// Optimizer steps completed in the run.
    pub step: usize,
    /// Optimizer steps completed in the epoch after `epoch` (0 at an epoch's end).
    pub step_in_epoch: usize,
    /// How many micro-batches each loader batch is cut into: 1, doubled by each shrink under
    /// a memory limit.
    #[serde(default = "one")]
    pub layout_factor: usize,
    /// The dynamic loss scaler, with loss scaling on.
    #[serde(default)]
    pub loss_scaler: Option<LossScaler>,
    /// Steps skipped in the run for non-finite gradients.
    #[serde(default)]
    pub skipped_steps: u64,
    /// Inside an epoch: the epoch's loss and metric sums so far.
    #[serde(default)]
    pub epoch_sums: Option<HostSums>,
    /// Inside an epoch: steps the epoch skipped so far.
    #[serde(default)]
    pub epoch_skipped: u64,
    /// The learning rate of the latest step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lr: Option<f64>,
    /// Steps clipped in the run.
    #[serde(default)]
    pub clipped_steps: u64,
    /// Inside an epoch: steps the epoch clipped so far.
    #[serde(default)]
    pub epoch_clipped: u64,
    /// With early stopping: its state (the best epoch and the patience used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_stop: Option<EarlyStopState>,
    /// The micro-batch validation shrank to under `on_limit = "shrink"`, where it did: a
    /// resumed run validates at it, as the run did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_micro_batch: Option<usize>,
}

fn one() -> usize {
    1
}

impl CheckpointState {
    /// The state after `epoch` epochs and `step` optimizer steps, nothing else recorded.
    pub fn at_epoch(epoch: usize, step: usize) -> Self {
        Self {
            epoch,
            step,
            layout_factor: 1,
            ..Self::default()
        }
    }

    /// Why this state, read back from a checkpoint's `meta.json`, is not one a run writes, if
    /// it is not: the field and its value. Checked where it is read, before a resume, a copy or
    /// an evaluation goes on from it.
    pub(crate) fn invalid(&self) -> Option<String> {
        // Counts past 2^53 are no run's (and no longer exact in JSON's numbers); one near
        // usize::MAX would wrap as the run counts on.
        const COUNTS: usize = 1 << 53;
        for (field, count) in [("epoch", self.epoch), ("step", self.step)] {
            if count > COUNTS {
                return Some(format!(
                    "{field} is {count}, more than 2^53, which no run counts to"
                ));
            }
        }
        let powers = |n: usize| n.is_power_of_two();
        if !powers(self.layout_factor) {
            return Some(format!(
                "layout_factor is {}, where a shrink doubles it from 1 (1, 2, 4, ...)",
                self.layout_factor
            ));
        }
        if self.valid_micro_batch == Some(0) {
            return Some("valid_micro_batch is 0, where validation takes 1 sample or more".into());
        }
        if self.step_in_epoch > self.step {
            return Some(format!(
                "step_in_epoch is {}, more than the run's steps ({})",
                self.step_in_epoch, self.step
            ));
        }
        if let Some(lr) = self.lr.filter(|lr| !(lr.is_finite() && *lr >= 0.0)) {
            return Some(format!(
                "lr is {lr}, not a rate (a finite number, 0 or more)"
            ));
        }
        if let Some(why) = self.loss_scaler.as_ref().and_then(LossScaler::invalid) {
            return Some(format!("loss_scaler.{why}"));
        }
        let best = self.early_stop.as_ref().and_then(|e| e.best);
        if let Some((epoch, _)) = best.filter(|&(e, _)| e > self.epoch) {
            return Some(format!(
                "early_stop.best is epoch {epoch}, after the checkpoint's epoch {}",
                self.epoch
            ));
        }
        None
    }

    /// The checkpoint's directory name: `epoch-<N>` at an epoch's end, `step-<S>` inside one.
    pub(super) fn name(&self) -> String {
        match self.step_in_epoch {
            0 => format!("epoch-{}", self.epoch),
            _ => format!("step-{}", self.step),
        }
    }
}
