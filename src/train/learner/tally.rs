//! What an epoch's steps add up to: the loss and metric sums, the steps done, skipped and
//! clipped, and the pace, for progress and the epoch's snapshot.

use std::time::Instant;

use burn::tensor::{Device, Tensor};

use crate::error::Error;
use crate::memory::DeviceCounts;
use crate::record::{EpochProgress, Pace};
use crate::task::metrics::read;
use crate::task::MetricSums;
use crate::train::checkpoint::CheckpointState;

/// What an epoch's steps add up to.
pub(in crate::train) struct Tally {
    pub(in crate::train) sums: MetricSums,
    /// Optimizer steps done in the epoch.
    pub(in crate::train) steps: usize,
    /// Steps skipped for non-finite gradients.
    pub(in crate::train) skipped: u64,
    /// Steps clipped, on the device, not yet read.
    clipped: Option<Tensor<1>>,
    /// Steps clipped before a resume inside the epoch.
    pub(in crate::train) clipped_before: u64,
    /// Samples the epoch had trained before a resume inside it (not timed now).
    pub(in crate::train) restored_samples: usize,
    /// Steps the epoch had done before a resume inside it.
    pub(in crate::train) restored_steps: usize,
    pub(in crate::train) started: Instant,
    /// Each step's milliseconds in this process, in order, and when the last one ended.
    step_ms: Vec<f64>,
    pub(in crate::train) last_step_end: Instant,
    /// The process's device counts when the epoch started, and when its last step ended.
    counts_at_start: DeviceCounts,
    counts_at_last_step: DeviceCounts,
}

impl Default for Tally {
    fn default() -> Self {
        Self::new()
    }
}

impl Tally {
    /// An epoch's tally, started now.
    pub(in crate::train) fn new() -> Self {
        Self {
            sums: MetricSums::default(),
            steps: 0,
            skipped: 0,
            clipped: None,
            clipped_before: 0,
            restored_samples: 0,
            restored_steps: 0,
            started: Instant::now(),
            step_ms: Vec::new(),
            last_step_end: Instant::now(),
            counts_at_start: DeviceCounts::now(),
            counts_at_last_step: DeviceCounts::now(),
        }
    }

    /// Marks a step's end: its time since the step before it (or the epoch's start).
    pub(in crate::train) fn step_ended(&mut self) {
        let now = Instant::now();
        self.step_ms
            .push((now - self.last_step_end).as_secs_f64() * 1e3);
        self.last_step_end = now;
        self.counts_at_last_step = DeviceCounts::now();
    }

    /// The pace of the epoch's steps in this process (`None` before its first).
    pub(in crate::train) fn step_pace(&self) -> Option<Pace> {
        let counts = self.counts_at_last_step.since(self.counts_at_start);
        Pace::of(&self.step_ms, counts.syncs, counts.memory_reads)
    }

    /// The tally of the epoch a checkpoint inside it (`state`) stopped in: its figures so far
    /// (on `device`) and its steps, skipped and clipped.
    pub(in crate::train) fn resumed(state: &CheckpointState, device: &Device) -> Self {
        let sums = (state.epoch_sums.as_ref())
            .map(|host| MetricSums::from_host(host, device))
            .unwrap_or_default();
        Self {
            restored_samples: sums.samples(),
            sums,
            steps: state.step_in_epoch,
            restored_steps: state.step_in_epoch,
            skipped: state.epoch_skipped,
            clipped_before: state.epoch_clipped,
            ..Self::new()
        }
    }

    /// The state of a checkpoint inside the epoch: `state` (the run's, after the epochs
    /// before) with the epoch's figures so far.
    pub(in crate::train) fn inside(
        &self,
        state: CheckpointState,
    ) -> Result<CheckpointState, Error> {
        Ok(CheckpointState {
            step_in_epoch: self.steps,
            epoch_sums: self.sums.to_host().map_err(Error::device)?,
            epoch_skipped: self.skipped,
            epoch_clipped: self.clipped()?,
            ..state
        })
    }

    /// Counts a step's clipping flag (1.0 or 0.0, on the device).
    pub(in crate::train) fn add_clipped(&mut self, flag: Tensor<1>) {
        self.clipped = Some(match self.clipped.take() {
            Some(sum) => sum.add(flag),
            None => flag,
        });
    }

    /// The epoch's pace in this process so far: samples/s, and the seconds left to the end
    /// of the epoch's steps and of the run's (`epochs_after` more epochs of `steps` steps).
    pub(in crate::train) fn pace(&self, steps: usize, epochs_after: usize) -> EpochProgress {
        let seconds = self.started.elapsed().as_secs_f64().max(1e-9);
        let samples = self.sums.samples() - self.restored_samples;
        let per_step = seconds / (self.steps - self.restored_steps).max(1) as f64;
        let epoch_eta_s = steps.saturating_sub(self.steps) as f64 * per_step;
        EpochProgress {
            samples_per_sec: samples as f64 / seconds,
            epoch_eta_s,
            run_eta_s: epoch_eta_s + (epochs_after * steps) as f64 * per_step,
            ..EpochProgress::default()
        }
    }

    /// Steps clipped in the epoch so far (one read from the device).
    pub(in crate::train) fn clipped(&self) -> Result<u64, Error> {
        let now = match &self.clipped {
            Some(sum) => read(sum.clone()).map_err(Error::device)? as u64,
            None => 0,
        };
        Ok(self.clipped_before + now)
    }
}
