//! An epoch's steps: loader batches grouped into optimizer steps, progress about once a
//! second, the divergence check, and checkpoints inside the epoch.

use std::time::{Duration, Instant};

use super::restore::skip_batches;
use super::setup::Run;
use super::{loader_error, Epochs, Position};
use crate::error::Error;
use crate::record::EpochProgress;
use crate::task::Task;
use crate::train::checkpoint::CheckpointState;
use crate::train::learner::{read_loss, StepLoss, Tally};

/// How often, at most, a step's loss is read for progress and the divergence check. Reading the
/// loss waits for the device and costs the step its overlap with the backend's threads:
/// measured on W1 (flex), a read every third step made the median step 20-22 ms against 16 ms
/// without; so it is read at most once per interval, and at each epoch's end.
pub(in crate::train) const REPORT_INTERVAL: Duration = Duration::from_secs(1);

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
            skip_batches(&mut *batches, state.step_in_epoch * accumulation)?;
            tally = Tally::resumed(state, &run.learner.device);
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
            // The loss is read (and checked) before the update where the step is known to
            // need it: at the epoch's end, for a checkpoint, and once a second has passed.
            // And every `run.log_every_steps` steps, where the run sets it.
            let logged =
                (self.config.run.log_every_steps).is_some_and(|n| at.step.is_multiple_of(n));
            let due = |last: Instant| done || logged || last.elapsed() >= REPORT_INTERVAL;
            let read = due(run.last_report) || self.checkpoints_at(run, at, tally.steps + 1);
            let loss = self.step(run, &mut group, (at, read), &mut tally)?;
            // Progress about once a second, decided after the step, however long it took.
            let report = due(run.last_report);
            self.after_step(run, at, loss, report, &tally)?;
            if done {
                break;
            }
        }
        Ok(tally)
    }

    /// Whether step `at`, the epoch's `step_in_epoch`th, writes a checkpoint: every
    /// `checkpoint.every_steps` steps, inside the epoch only (its end writes one anyway).
    fn checkpoints_at(&self, run: &Run<T>, at: Position, step_in_epoch: usize) -> bool {
        let every = self.config.checkpoint.every_steps;
        step_in_epoch < run.steps_per_epoch && every.is_some_and(|n| at.step.is_multiple_of(n))
    }

    /// After step `at`: with `report` (about once a second, and at the epoch's end), progress;
    /// every `checkpoint.every_steps` steps a checkpoint, never of a diverged model; and one
    /// where a stop was asked for, which then ends the run with [`Error::Interrupted`].
    fn after_step(
        &mut self,
        run: &mut Run<T>,
        at: Position,
        loss: StepLoss,
        report: bool,
        tally: &Tally,
    ) -> Result<(), Error> {
        // A run asked to stop writes a checkpoint where it is, and stops.
        let stop = tally.steps < run.steps_per_epoch && self.stopping();
        let checkpoint = stop || self.checkpoints_at(run, at, tally.steps);
        if !(checkpoint || report) {
            return Ok(());
        }
        let loss = match loss.value {
            Some(value) => value,
            None => read_loss(loss.on_device, at)?,
        };
        if report {
            run.last_report = Instant::now();
            // The loss read has waited for the device already: no second wait.
            let in_use = self.guard.peek_window().bytes_in_use;
            let progress = EpochProgress {
                epoch: at.epoch,
                epochs: self.config.train.epochs,
                step: tally.steps,
                steps: run.steps_per_epoch,
                loss,
                lr: Some(run.learner.schedule.current()),
                bytes_in_use: Some(in_use),
                limit_bytes: self.guard.limit_bytes(),
                ..tally.pace(run.steps_per_epoch, self.config.train.epochs - at.epoch)
            };
            self.guard.recorder_mut().progress(&progress);
        }
        if checkpoint {
            let state = tally.inside(self.state(run, at.epoch - 1))?;
            self.checkpoint(run, &state)?;
        }
        match stop {
            true => Err(Error::Interrupted),
            false => Ok(()),
        }
    }
}
