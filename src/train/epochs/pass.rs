//! An epoch's steps: loader batches grouped into optimizer steps, progress about once a
//! second, the divergence check, and checkpoints inside the epoch.

use std::time::{Duration, Instant};

use burn::tensor::Tensor;

use super::restore::{inside_epoch, skip_batches};
use super::setup::Run;
use super::{loader_error, Epochs, Position};
use crate::error::{Error, TrainingError};
use crate::record::EpochProgress;
use crate::task::metrics::read;
use crate::task::{MetricSums, Task};
use crate::train::checkpoint::CheckpointState;

/// How often, at most, a step's loss is read for progress and the divergence check. Reading the
/// loss waits for the device and costs the step its overlap with the backend's threads:
/// measured on W1 (flex), a read every third step made the median step 20-22 ms against 16 ms
/// without; so it is read at most once per interval, and at each epoch's end.
const REPORT_INTERVAL: Duration = Duration::from_secs(1);

/// What an epoch's steps add up to.
pub(super) struct Tally {
    pub(super) sums: MetricSums,
    /// Optimizer steps done in the epoch.
    pub(super) steps: usize,
    /// Steps skipped for non-finite gradients.
    pub(super) skipped: u64,
    /// Steps clipped, on the device, not yet read.
    clipped: Option<Tensor<1>>,
    /// Steps clipped before a resume inside the epoch.
    clipped_before: u64,
    /// Samples the epoch had trained before a resume inside it (not timed now).
    pub(super) restored_samples: usize,
    /// Steps the epoch had done before a resume inside it.
    restored_steps: usize,
    pub(super) started: Instant,
}

impl Tally {
    fn new() -> Self {
        Self {
            sums: MetricSums::default(),
            steps: 0,
            skipped: 0,
            clipped: None,
            clipped_before: 0,
            restored_samples: 0,
            restored_steps: 0,
            started: Instant::now(),
        }
    }

    /// Counts a step's clipping flag (1.0 or 0.0, on the device).
    pub(super) fn add_clipped(&mut self, flag: Tensor<1>) {
        self.clipped = Some(match self.clipped.take() {
            Some(sum) => sum.add(flag),
            None => flag,
        });
    }

    /// The epoch's pace in this process so far: samples/s, and the seconds left to the end
    /// of the epoch's steps and of the run's (`epochs_after` more epochs of `steps` steps).
    fn pace(&self, steps: usize, epochs_after: usize) -> EpochProgress {
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
    pub(super) fn clipped(&self) -> Result<u64, Error> {
        let now = match &self.clipped {
            Some(sum) => read(sum.clone()).map_err(Error::device)? as u64,
            None => 0,
        };
        Ok(self.clipped_before + now)
    }
}

impl<T: Task> Epochs<'_, T> {
    /// Trains epoch `epoch`; `resumed` is the checkpoint inside it that a resume starts from.
    pub(super) fn pass(
        &mut self,
        run: &mut Run<T>,
        epoch: usize,
        resumed: Option<&CheckpointState>,
    ) -> Result<Tally, Error> {
        let accumulation = self.config.train.accumulation_steps;
        let mut tally = Tally::new();
        let loader = run.train_loader.clone();
        let mut batches = loader.iter();
        if let Some(state) = resumed {
            // Inside the epoch: its first steps' batches are drawn and passed over, and its
            // figures so far come back from the checkpoint.
            let (sums, skip) = inside_epoch(state, accumulation, &run.device);
            skip_batches(&mut *batches, skip)?;
            tally.restored_samples = sums.samples();
            tally.sums = sums;
            tally.steps = state.step_in_epoch;
            tally.restored_steps = state.step_in_epoch;
            tally.skipped = state.epoch_skipped;
            tally.clipped_before = state.epoch_clipped;
        }
        let mut group = Vec::with_capacity(accumulation);
        loop {
            let next = batches.next().transpose().map_err(loader_error)?;
            let done = next.is_none();
            group.extend(next);
            if group.len() < accumulation && !done {
                continue;
            }
            if group.is_empty() {
                break;
            }
            let at = Position {
                epoch,
                step: self.stats.steps + 1,
            };
            let loss = self.step(run, &mut group, at, &mut tally)?;
            self.after_step(run, at, loss, done, &tally)?;
            if done {
                break;
            }
        }
        Ok(tally)
    }

    /// After step `at`: about once a second (and at the epoch's end) the loss is read for
    /// progress and the divergence check; every `checkpoint.every_steps` steps a checkpoint
    /// is written, never of a diverged model, and one where a stop was asked for, which
    /// then ends the run with [`Error::Interrupted`].
    fn after_step(
        &mut self,
        run: &mut Run<T>,
        at: Position,
        loss: Tensor<1>,
        done: bool,
        tally: &Tally,
    ) -> Result<(), Error> {
        // Checkpoints inside the epoch only: its end writes one anyway. A run asked to stop
        // writes one where it is, and stops.
        let inside = tally.steps < run.steps_per_epoch;
        let stop = inside && self.stopping();
        let every = (self.config.checkpoint.every_steps).is_some_and(|n| at.step.is_multiple_of(n));
        let checkpoint = stop || (inside && every);
        let report = done || run.last_report.elapsed() >= REPORT_INTERVAL;
        if !(checkpoint || report) {
            return Ok(());
        }
        let loss = read(loss).map_err(Error::device)?;
        if !loss.is_finite() {
            return Err(TrainingError::Diverged {
                epoch: at.epoch,
                step: at.step,
                loss,
            }
            .into());
        }
        if report {
            run.last_report = Instant::now();
            // The loss read has waited for the device already.
            let in_use = self.guard.in_use()?;
            let progress = EpochProgress {
                epoch: at.epoch,
                epochs: self.config.train.epochs,
                step: tally.steps,
                steps: run.steps_per_epoch,
                loss,
                lr: Some(run.schedule.current()),
                bytes_in_use: Some(in_use),
                limit_bytes: self.guard.limit_bytes(),
                ..tally.pace(run.steps_per_epoch, self.config.train.epochs - at.epoch)
            };
            self.recorder.progress(&progress);
        }
        if checkpoint {
            let state = CheckpointState {
                step_in_epoch: tally.steps,
                epoch_sums: tally.sums.to_host().map_err(Error::device)?,
                epoch_skipped: tally.skipped,
                epoch_clipped: tally.clipped()?,
                ..self.state(run, at.epoch - 1)
            };
            self.checkpoint(run, state, false)?;
        }
        match stop {
            true => Err(Error::Interrupted),
            false => Ok(()),
        }
    }
}
