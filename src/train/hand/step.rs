//! One optimizer step of a hand loop: the loop's closure gives each micro-batch's loss (and
//! metrics), and the run's [`Learner`](crate::train::learner::Learner) takes the step as it
//! takes the trainer's: under the memory checks (retried smaller when the limit shrinks the
//! micro-batch), the loss read and checked, then the update at the schedule's rate, clipped,
//! measured before and after.

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use burn::module::Module;
use burn::tensor::Tensor;

use super::HandLoop;
use crate::config::OnLimit;
use crate::error::{Error, TrainingError};
use crate::record::EpochProgress;
use crate::task::StepOutput;
use crate::train::checkpoint::Marks;
use crate::train::learner::{read_loss, Position, StepLoss};

/// How often, at most, a step's loss is read for progress and the divergence check. Reading the
/// loss waits for the device and costs the step its overlap with the backend's threads:
/// measured on W1 (flex), a read every third step made the median step 20-22 ms against 16 ms
/// without; so the trainer reads it at most once per interval, and at each epoch's end.
pub(in crate::train) const REPORT_INTERVAL: Duration = Duration::from_secs(1);

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
        let loss = self.step_as(batches, output, true)?;
        Ok(loss.value.expect("a step asked to read its loss reads it"))
    }

    /// A step, as [`step_batches`](Self::step_batches) takes it, but with its loss read before
    /// the update only where `read` asks or the run needs it (at an epoch's last step, for
    /// progress and for a checkpoint): the trainer's steps, as reading waits for the device.
    pub(in crate::train) fn step_as(
        &mut self,
        batches: &[usize],
        output: impl FnMut(&M, Range<usize>) -> StepOutput,
        read: bool,
    ) -> Result<StepLoss, Error> {
        if let Some(failed) = &self.course.failed {
            return Err(match failed.interrupted {
                true => Error::Interrupted,
                false => stopped(&failed.message),
            });
        }
        if self.learner.stopped_early() {
            let epoch = self.epoch;
            return Err(TrainingError::StepAfterEarlyStop { epoch }.into());
        }
        if batches.iter().sum::<usize>() == 0 {
            let step = self.stats.steps + 1;
            return Err(TrainingError::EmptyStep { step }.into());
        }
        let stepped = match self.stopping() {
            true => self.interrupt(batches, output),
            false => self.try_step(batches, output, read),
        };
        if let Err(e) = &stepped {
            self.fail(e);
        }
        stepped
    }

    /// Whether the next step may call its closure more than once for the same samples: where
    /// the limit may retry it (smaller, or with a part moved to host memory), and a new run's
    /// first step under `on_limit = "fit"`, whose probes run its first micro-batches. A loop
    /// that moves its items into a step's batches keeps them for such a step.
    pub(in crate::train) fn retries_step(&self) -> bool {
        let on_limit = self.config.memory.on_limit;
        on_limit == OnLimit::Shrink
            || self.guard.layout().next_offload().is_some()
            || (self.place.starting && on_limit == OnLimit::Fit)
    }

    /// Whether the run was asked to stop.
    fn stopping(&self) -> bool {
        (self.course.stop.iter()).any(|stop| stop.load(Ordering::SeqCst))
    }

    fn try_step(
        &mut self,
        batches: &[usize],
        mut output: impl FnMut(&M, Range<usize>) -> StepOutput,
        read: bool,
    ) -> Result<StepLoss, Error> {
        if std::mem::take(&mut self.place.starting) {
            self.start(batches, &mut output)?;
        }
        self.open_epoch()?;
        let at = Position {
            epoch: self.epoch,
            step: self.stats.steps + 1,
        };
        // The loss is read (and checked) before the update where the step is known to need
        // it: where asked, at the epoch's end, for a checkpoint, once a second has passed, and
        // every `run.log_every_steps` steps: a diverged step then updates nothing.
        let logged = (self.config.run.log_every_steps).is_some_and(|n| at.step.is_multiple_of(n));
        let end = self.place.tally.steps + 1 >= self.place.steps_per_epoch;
        let due = |last: Instant| end || logged || last.elapsed() >= REPORT_INTERVAL;
        let read = read
            || due(self.clock.last_report)
            || self.checkpoints_at(at, self.place.tally.steps + 1);
        let counts = (&mut self.stats, &mut self.place.tally);
        let run = (&mut self.guard, &mut self.rec);
        let mut loss = (self.learner).step(run, counts, (at, read), batches, output)?;
        // Progress about once a second, decided after the step, however long it took.
        let report = due(self.clock.last_report);
        self.after_step(at, &mut loss, report)?;
        // Read before a stop's checkpoint, where nothing read it: no diverged model is saved.
        self.place.unread = match loss.value {
            Some(_) => None,
            None => Some((loss.on_device.clone(), at)),
        };
        Ok(loss)
    }

    /// After step `at`: with `report`, progress; every `checkpoint.every_steps` steps inside
    /// the epoch a checkpoint with the epoch's figures so far (its end writes one anyway),
    /// never of a diverged model; and one where a stop was asked for, which then ends the run
    /// with [`Error::Interrupted`].
    fn after_step(&mut self, at: Position, loss: &mut StepLoss, report: bool) -> Result<(), Error> {
        let inside = self.place.tally.steps < self.place.steps_per_epoch;
        // A run asked to stop writes a checkpoint where it is, and stops.
        let stop = inside && self.stopping();
        let checkpoint = stop || self.checkpoints_at(at, self.place.tally.steps);
        if !(checkpoint || report) {
            return Ok(());
        }
        let value = match loss.value {
            Some(value) => value,
            None => read_loss(loss.on_device.clone(), at)?,
        };
        loss.value = Some(value);
        if report {
            self.report(at, value);
        }
        if checkpoint {
            let before = (self.learner).state(&self.stats, &self.guard, at.epoch - 1);
            let state = self.place.tally.inside(before)?;
            let (run, checkpointer) = ((&mut self.guard, &mut self.rec), &self.checkpointer);
            (self.learner).checkpoint(run, checkpointer, &state, Marks::default())?;
        }
        match stop {
            true => Err(Error::Interrupted),
            false => Ok(()),
        }
    }

    /// Stopped before a step: a new run's start first (its fit and checkpoint 0, from which
    /// it resumes), or a checkpoint where the open epoch is, of a model whose last loss is
    /// finite (an epoch's end wrote one already); then [`Error::Interrupted`].
    fn interrupt(
        &mut self,
        batches: &[usize],
        mut output: impl FnMut(&M, Range<usize>) -> StepOutput,
    ) -> Result<StepLoss, Error> {
        if std::mem::take(&mut self.place.starting) {
            self.start(batches, &mut output)?;
        } else if self.place.open && self.place.tally.steps > 0 {
            if let Some((loss, at)) = self.place.unread.take() {
                read_loss(loss, at)?;
            }
            let before = (self.learner).state(&self.stats, &self.guard, self.epoch - 1);
            let state = self.place.tally.inside(before)?;
            let (run, checkpointer) = ((&mut self.guard, &mut self.rec), &self.checkpointer);
            (self.learner).checkpoint(run, checkpointer, &state, Marks::default())?;
        }
        Err(Error::Interrupted)
    }

    /// Whether step `at`, the epoch's `step_in_epoch`th, writes a checkpoint: every
    /// `checkpoint.every_steps` steps, inside the epoch only.
    fn checkpoints_at(&self, at: Position, step_in_epoch: usize) -> bool {
        let every = self.config.checkpoint.every_steps;
        step_in_epoch < self.place.steps_per_epoch
            && every.is_some_and(|n| at.step.is_multiple_of(n))
    }

    /// Progress after step `at`, whose loss was `loss` (the observer's `step`, and
    /// TensorBoard's `step/` scalars where `run.log_every_steps` asks).
    fn report(&mut self, at: Position, loss: f64) {
        self.clock.last_report = Instant::now();
        let (steps, epochs) = (self.place.steps_per_epoch, self.config.train.epochs);
        let progress = EpochProgress {
            epoch: at.epoch,
            epochs,
            step: self.place.tally.steps,
            steps,
            loss,
            lr: Some(self.learner.schedule.current()),
            // The step's loss was read: the device has waited already.
            bytes_in_use: Some(self.guard.readings().peek_window().bytes_in_use),
            limit_bytes: self.guard.limit_bytes(),
            ..(self.place.tally).pace(steps, epochs.saturating_sub(at.epoch))
        };
        self.rec.progress(&progress);
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
            (&mut self.guard, &mut self.rec),
            &self.checkpointer,
            &state,
            Marks::default(),
        )
    }

    /// Opens the next epoch at its first step, ending the one before if the loop did not.
    fn open_epoch(&mut self) -> Result<(), Error> {
        if self.place.open {
            return Ok(());
        }
        if self.epoch >= self.config.train.epochs {
            let epochs = self.config.train.epochs;
            return Err(TrainingError::StepAfterLastEpoch { epochs }.into());
        }
        self.epoch += 1;
        self.place.open = true;
        self.guard.begin_epoch(&mut self.rec);
        self.place.tally = self.place.resumed.take().unwrap_or_default();
        // Timed from the epoch's first step here, as the trainer's is after its passed-over
        // batches.
        self.place.tally.started = std::time::Instant::now();
        self.place.validated = None;
        Ok(())
    }
}

/// The error of a call after a step failed.
pub(super) fn stopped(e: &str) -> Error {
    let cause = e.to_string();
    TrainingError::AfterFailedStep { cause }.into()
}
