//! One optimizer step of a hand loop: the loss of each micro-batch the limit allows, from the
//! loop's closure, backward and accumulated under the memory checks (retried smaller when the
//! limit shrinks the micro-batch), then the update at the schedule's rate, clipped, measured
//! before and after.

use std::ops::Range;
use std::time::Instant;

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::Tensor;

use super::HandLoop;
use crate::error::{Error, TrainingError};
use crate::task::{MetricSums, StepOutput};
use crate::train::precision::{GroupOutcome, MAX_CONSECUTIVE_SKIPS};
use crate::train::step::protocol::Updater;
use crate::train::step::{backward_share, GradientSum};

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
        if let Some(e) = &self.failed {
            return Err(stopped(e));
        }
        if self.stopped_early {
            let epoch = self.epoch;
            return Err(TrainingError::StepAfterEarlyStop { epoch }.into());
        }
        let stepped = self.try_step(samples, output);
        if let Err(e) = &stepped {
            self.failed = Some(e.to_string());
        }
        stepped
    }

    fn try_step(
        &mut self,
        samples: usize,
        mut output: impl FnMut(&M, Range<usize>) -> StepOutput,
    ) -> Result<f64, Error> {
        // The fit's probes come before the epoch, as the trainer's do: the epoch's peak is its
        // steps'.
        if std::mem::take(&mut self.to_fit) {
            self.fit(samples, &mut |model, rows| output(model, rows).loss)?;
        }
        self.open_epoch()?;
        let (epoch, step) = (self.epoch, self.stats.steps + 1);
        let seed = self.config.run.seed;
        let (device, precision) = (&self.device, &self.precision);
        let model = self
            .model
            .as_ref()
            .expect("the model is back after every update");
        let (grads, value, sums) =
            (self.guard).run_step(&mut self.recorder, epoch, step, |micro, check| {
                // Dropout draws from the device's generator: seeded per step, as the trainer does.
                device.seed(crate::train::epochs::step_seed(seed, step));
                let micro_batches = samples.div_ceil(micro.max(1));
                let mut accumulator = GradientSum::<M>::for_step(check.layout(), micro_batches);
                // The step's loss stays on the device until the step is done: one read a step,
                // not one between micro-batches.
                let mut value: Option<Tensor<1>> = None;
                // The metrics of this attempt only: a retried step counts its last.
                let mut sums = MetricSums::default();
                for start in (0..samples).step_by(micro.max(1)) {
                    let rows = start..(start + micro).min(samples);
                    let share = rows.len() as f64 / samples.max(1) as f64;
                    let out = output(&precision.compute_view(model), rows.clone());
                    let l = out.loss;
                    if !out.metrics.is_empty() {
                        sums.add(l.clone(), out.metrics, rows.len());
                    }
                    let part = l.clone().detach().mul_scalar(share);
                    value = Some(value.map_or(part.clone(), |sum| sum + part));
                    backward_share(&mut accumulator, model, precision, l, share, || {
                        check.check()
                    })?;
                }
                Ok((accumulator.take(model), value, sums))
            })?;
        let value = value.map_or(0.0, |v| v.into_scalar::<f32>() as f64);
        // As the trainer's divergence check, before the update: no weight takes the step.
        if !value.is_finite() {
            let loss = value;
            return Err(TrainingError::Diverged { epoch, step, loss }.into());
        }
        self.update((epoch, step), grads)?;
        self.stats.steps = step;
        self.tally.loss_sum += value * samples as f64;
        self.tally.samples += samples;
        self.tally.steps += 1;
        self.tally.sums.merge(sums);
        // Told as the trainer tells its steps: the step's number in its epoch.
        self.recorder.step_done(epoch, self.tally.steps);
        Ok(value)
    }

    /// Step `step`'s update with `grads` at the schedule's rate, clipped, measured before and
    /// after; a step that loss scaling skipped is counted.
    fn update(
        &mut self,
        (epoch, step): (usize, usize),
        grads: GradientsParams,
    ) -> Result<(), Error> {
        let updater = Updater {
            optimizer: &mut self.optimizer,
            master: &mut self.master,
            precision: &mut self.precision,
            schedule: &mut self.schedule,
            clip: self.clip,
        };
        let model = (self.model.take()).expect("the model is back after every update");
        let updated = updater.update(
            (&mut self.guard, &mut self.recorder),
            (epoch, step),
            model,
            grads,
        )?;
        self.model = Some(updated.model);
        if let Some(flag) = updated.clipped {
            self.tally.clipped += flag.into_scalar::<f32>() as u64;
        }
        if updated.outcome == GroupOutcome::Skip {
            self.skipped(epoch, step)?;
        }
        (self.guard).after_step(&mut self.recorder, epoch, step)?;
        Ok(())
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
        self.guard.begin_epoch(&mut self.recorder);
        self.tally.started = Some(Instant::now());
        Ok(())
    }

    /// Counts a step that loss scaling skipped, and stops a run whose scale has collapsed.
    fn skipped(&mut self, epoch: usize, step: usize) -> Result<(), Error> {
        self.tally.skipped += 1;
        self.stats.skipped_steps += 1;
        let scaler = self.precision.scaler().expect("only loss scaling skips");
        if scaler.consecutive_skips() >= MAX_CONSECUTIVE_SKIPS {
            return Err(TrainingError::LossScaleCollapsed {
                epoch,
                step,
                skips: scaler.consecutive_skips(),
                scale: scaler.scale(),
            }
            .into());
        }
        Ok(())
    }
}

/// The error of a call after a step failed.
pub(super) fn stopped(e: &str) -> Error {
    let cause = e.to_string();
    TrainingError::AfterFailedStep { cause }.into()
}
