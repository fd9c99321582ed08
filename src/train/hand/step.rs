//! One optimizer step of a hand loop: the loop's closure gives each micro-batch's loss (and
//! metrics), and the run's [`Learner`](crate::train::learner::Learner) takes the step as it
//! takes the trainer's: under the memory checks (retried smaller when the limit shrinks the
//! micro-batch), the loss read and checked, then the update at the schedule's rate, clipped,
//! measured before and after.

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::time::Instant;

use burn::module::Module;
use burn::tensor::Tensor;

use super::HandLoop;
use crate::config::OnLimit;
use crate::error::{Error, TrainingError};
use crate::record::EpochProgress;
use crate::task::StepOutput;
use crate::train::checkpoint::Marks;
use crate::train::epochs::REPORT_INTERVAL;
use crate::train::learner::Position;

impl<M: Module + 'static> HandLoop<M> {
    /// Trains one optimizer step over a batch of `samples` samples, and returns its mean loss.
    ///
    /// `loss` gets the model and a range of the batch's samples (`0..samples`, or a part of it
    /// when the limit asks for micro-batches) and returns that micro-batch's mean loss, with
    /// its graph. The step weighs each micro-batch by its share of the batch, so the update
    /// equals the whole batch's. Under `on_limit = "shrink"`, a breach halves the micro-batch
    /// and runs the step again: `loss` must not change anything the loop keeps.
    ///
    /// The first step of an epoch opens it; a step after the last epoch is an error.
    pub fn step(
        &mut self,
        samples: usize,
        mut loss: impl FnMut(&M, Range<usize>) -> Tensor<1>,
    ) -> Result<f64, Error> {
        self.step_with(samples, |model, rows| StepOutput::new(loss(model, rows)))
    }

    /// [`step`](Self::step) with metrics: `output` gives a micro-batch's [`StepOutput`] (its
    /// loss and metrics, as a task's `step` does), and the epoch's snapshot has each metric as
    /// `train_<name>`, weighted by samples over the epoch, as the trainer's has.
    pub fn step_with(
        &mut self,
        samples: usize,
        output: impl FnMut(&M, Range<usize>) -> StepOutput,
    ) -> Result<f64, Error> {
        self.step_batches(&[samples], output)
    }

    /// [`step_with`](Self::step_with) over a step of several batches (of `batches` samples
    /// each, in order: accumulated into one update): each batch is cut into micro-batches on
    /// its own, where the limit asks, as the trainer cuts its loader batches, so that a short
    /// batch stays short. `output` gets ranges of the step's samples, `0..` their sum.
    pub fn step_batches(
        &mut self,
        batches: &[usize],
        output: impl FnMut(&M, Range<usize>) -> StepOutput,
    ) -> Result<f64, Error> {
        if let Some(e) = &self.failed {
            return Err(stopped(e));
        }
        if self
            .stop
            .as_ref()
            .is_some_and(|stop| stop.load(Ordering::SeqCst))
        {
            return Err(Error::Interrupted);
        }
        if self.learner.stopped_early() {
            let epoch = self.epoch;
            return Err(TrainingError::StepAfterEarlyStop { epoch }.into());
        }
        if batches.iter().sum::<usize>() == 0 {
            let step = self.stats.steps + 1;
            return Err(TrainingError::EmptyStep { step }.into());
        }
        let stepped = self.try_step(batches, output);
        if let Err(e) = &stepped {
            self.failed = Some(e.to_string());
        }
        stepped
    }

    fn try_step(
        &mut self,
        batches: &[usize],
        mut output: impl FnMut(&M, Range<usize>) -> StepOutput,
    ) -> Result<f64, Error> {
        if std::mem::take(&mut self.starting) {
            self.start(batches, &mut output)?;
        }
        self.open_epoch()?;
        let at = Position {
            epoch: self.epoch,
            step: self.stats.steps + 1,
        };
        // Read at every step: the loop gets its loss, and a diverged step updates nothing.
        let counts = (&mut self.stats, &mut self.tally);
        let loss = (self.learner).step(&mut self.guard, counts, (at, true), batches, output)?;
        let loss = loss.value.expect("a step asked to read its loss reads it");
        self.report(at, loss)?;
        self.checkpoint_inside(at)?;
        Ok(loss)
    }

    /// Progress after step `at`, as the trainer reports it: about once a second, at the
    /// epoch's last step, and every `run.log_every_steps` steps where the run sets it (the
    /// observer's `step`, and TensorBoard's `step/` scalars).
    fn report(&mut self, at: Position, loss: f64) -> Result<(), Error> {
        let logged = (self.config.run.log_every_steps).is_some_and(|n| at.step.is_multiple_of(n));
        let last = self.tally.steps >= self.steps_per_epoch;
        if !(logged || last || self.last_report.elapsed() >= REPORT_INTERVAL) {
            return Ok(());
        }
        self.last_report = Instant::now();
        let (steps, epochs) = (self.steps_per_epoch, self.config.train.epochs);
        let progress = EpochProgress {
            epoch: at.epoch,
            epochs,
            step: self.tally.steps,
            steps,
            loss,
            lr: Some(self.learner.schedule.current()),
            // The step's loss was read: the device has waited already.
            bytes_in_use: Some(self.guard.peek_window().bytes_in_use),
            limit_bytes: self.guard.limit_bytes(),
            ..(self.tally).pace(steps, epochs.saturating_sub(at.epoch))
        };
        self.guard.recorder_mut().progress(&progress);
        Ok(())
    }

    /// Before a new run's first step, as the trainer's: under `on_limit = "fit"` the step is
    /// probed and the micro-batch chosen (before the epoch: its peak is its steps'), then
    /// checkpoint 0 is written, from which the run can start again.
    fn start(
        &mut self,
        batches: &[usize],
        output: &mut impl FnMut(&M, Range<usize>) -> StepOutput,
    ) -> Result<(), Error> {
        if self.config.memory.on_limit == OnLimit::Fit {
            self.fit(batches, output)?;
        }
        let state = (self.learner).state(&self.stats, &self.guard, 0);
        (self.learner).checkpoint(
            &mut self.guard,
            &self.checkpointer,
            &state,
            Marks::default(),
        )
    }

    /// After step `at`, every `checkpoint.every_steps` steps inside the epoch (its end writes
    /// one anyway), a checkpoint with the epoch's figures so far, as the trainer's.
    fn checkpoint_inside(&mut self, at: Position) -> Result<(), Error> {
        let every = self.config.checkpoint.every_steps;
        let inside = self.tally.steps < self.steps_per_epoch;
        if !(inside && every.is_some_and(|n| at.step.is_multiple_of(n))) {
            return Ok(());
        }
        let before = (self.learner).state(&self.stats, &self.guard, at.epoch - 1);
        let state = self.tally.inside(before)?;
        (self.learner).checkpoint(
            &mut self.guard,
            &self.checkpointer,
            &state,
            Marks::default(),
        )
    }

    /// Opens the next epoch at its first step, ending the one before if the loop did not.
    fn open_epoch(&mut self) -> Result<(), Error> {
        if self.open {
            return Ok(());
        }
        if self.epoch >= self.config.train.epochs {
            let epochs = self.config.train.epochs;
            return Err(TrainingError::StepAfterLastEpoch { epochs }.into());
        }
        self.epoch += 1;
        self.open = true;
        self.guard.begin_epoch();
        self.tally = self.resumed.take().unwrap_or_default();
        // Timed from the epoch's first step here, as the trainer's is after its passed-over
        // batches.
        self.tally.started = std::time::Instant::now();
        self.validated = None;
        Ok(())
    }
}

/// The error of a call after a step failed.
pub(super) fn stopped(e: &str) -> Error {
    let cause = e.to_string();
    TrainingError::AfterFailedStep { cause }.into()
}
