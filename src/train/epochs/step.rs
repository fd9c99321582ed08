//! One optimizer step: the group's gradients under the memory limit (retried with smaller
//! micro-batches when it asks, through [`MemoryGuard::run_step`](crate::train::MemoryGuard::run_step)),
//! then the update at the schedule's rate, clipped, and the step's figures.

use burn::tensor::Tensor;

use super::pass::Tally;
use super::setup::Run;
use super::{step_seed, Epochs, Position};
use crate::config::OnLimit;
use crate::error::{Error, TrainingError};
use crate::task::Task;
use crate::train::precision::{GroupOutcome, MAX_CONSECUTIVE_SKIPS};
use crate::train::step::protocol::Updater;
use crate::train::step::{accumulate_gradients, micro_batches, SumPlace};

impl<T: Task> Epochs<'_, T> {
    /// Trains one optimizer step over `group` (emptied), and returns its loss, on the device.
    pub(super) fn step(
        &mut self,
        run: &mut Run<T>,
        group: &mut Vec<Vec<T::Item>>,
        at: Position,
        tally: &mut Tally,
    ) -> Result<Tensor<1>, Error> {
        // Only a step that a limit may retry (smaller, or with a part moved to host memory)
        // keeps its items for the retry.
        let shrinks = self.config.memory.on_limit == OnLimit::Shrink;
        let retry = shrinks || self.guard.layout().next_offload().is_some();
        let (task, seed) = (self.task, self.config.run.seed);
        let accumulated =
            (self.guard).run_step(self.recorder, at.epoch, at.step, |micro, check| {
                // Dropout draws from the device's generator, whose state cannot be saved: it is
                // seeded per step instead, so a resumed run draws what an uninterrupted one does.
                run.device.seed(step_seed(seed, at.step));
                let micro = micro_batches(group, micro, retry);
                let (model, precision) = (run.model(), &run.precision);
                let place = SumPlace::from(check.layout());
                let check = || check.check();
                accumulate_gradients(task, model, micro, &run.device, precision, place, check)
            })?;
        group.clear();
        let loss = accumulated.loss();
        let grads = accumulated.grads;
        let (guard, recorder) = (&mut *self.guard, &mut *self.recorder);
        let (outcome, clipped) = run.update(|run, model| {
            let updater = Updater {
                optimizer: &mut run.optimizer,
                master: &mut run.master,
                precision: &mut run.precision,
                schedule: &mut run.schedule,
                clip: run.clip,
            };
            let updated = updater.update((guard, recorder), (at.epoch, at.step), model, grads)?;
            Ok::<_, Error>((updated.model, (updated.outcome, updated.clipped)))
        })?;
        if let Some(flag) = clipped {
            tally.add_clipped(flag);
        }
        if outcome == GroupOutcome::Skip {
            self.skipped(run, at, tally)?;
        }
        // The update allocates too (optimizer state on the first step).
        (self.guard).after_step(self.recorder, at.epoch, at.step)?;
        tally.steps += 1;
        self.stats.steps = at.step;
        tally.sums.merge(accumulated.sums);
        self.recorder.step_done(at.epoch, tally.steps);
        crate::failpoint::pass("step");
        Ok(loss)
    }

    /// Counts a step that loss scaling skipped, and stops a run whose scale has collapsed.
    fn skipped(&mut self, run: &Run<T>, at: Position, tally: &mut Tally) -> Result<(), Error> {
        tally.skipped += 1;
        self.stats.skipped_steps += 1;
        let scaler = run.precision.scaler().expect("only loss scaling skips");
        if scaler.consecutive_skips() >= MAX_CONSECUTIVE_SKIPS {
            return Err(TrainingError::LossScaleCollapsed {
                epoch: at.epoch,
                step: at.step,
                skips: scaler.consecutive_skips(),
                scale: scaler.scale(),
            }
            .into());
        }
        Ok(())
    }
}
