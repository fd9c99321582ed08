//! One optimizer step, as every loop takes it: the gradients of its micro-batches under the
//! memory limit (retried with smaller micro-batches, or with a part moved to host memory, when
//! the limit asks, through [`MemoryGuard::run_step`]), then the update at the schedule's rate,
//! clipped, and the step's figures in the epoch's [`Tally`].

use std::ops::Range;

use burn::module::Module;
use burn::optim::GradientsParams;

use super::{Learner, Tally};
use crate::error::{Error, TrainingError};
use crate::task::metrics::DeferredMean;
use crate::task::StepOutput;
use crate::train::precision::{GroupOutcome, MAX_CONSECUTIVE_SKIPS};
use crate::train::recorder::RunRecorder;
use crate::train::stats::Stats;
use crate::train::step::{accumulate, apply_gradients, micro_ranges, SumPlace, Updated};
use crate::train::MemoryGuard;

/// A step's place in the run: its epoch, and its number among the run's optimizer steps.
#[derive(Clone, Copy, Debug)]
pub(in crate::train) struct Position {
    pub(in crate::train) epoch: usize,
    pub(in crate::train) step: usize,
}

/// A step's mean loss.
pub(in crate::train) struct StepLoss {
    /// On the device, not read.
    pub(in crate::train) on_device: DeferredMean,
    /// Read, where the step was asked to read it.
    pub(in crate::train) value: Option<f64>,
}

impl<M: Module> Learner<M> {
    /// Trains step `at` over batches of `batches` samples each (cut into the micro-batches
    /// the limit allows), with `output` giving a micro-batch's loss and metrics from the model
    /// in the run's compute precision and the micro-batch's range of the step's samples. A
    /// retried step calls `output` again for its ranges: `output` must change nothing the loop
    /// keeps.
    ///
    /// Returns the step's mean loss, on the device; with `read`, also read from the device
    /// before the update, where a loss that is not finite stops the run (the divergence
    /// check): no weight takes the step. Reading waits for the device, so a loop reads only
    /// when it needs the figure.
    pub(in crate::train) fn step(
        &mut self,
        (guard, rec): (&mut MemoryGuard, &mut RunRecorder),
        (stats, tally): (&mut Stats, &mut Tally),
        (at, read): (Position, bool),
        batches: &[usize],
        mut output: impl FnMut(&M, Range<usize>) -> StepOutput,
    ) -> Result<StepLoss, Error> {
        let (model, device, precision) = (self.model(), &self.device, &self.precision);
        let seed = self.seed;
        let accumulated = guard.run_step(rec, at.epoch, at.step, |micro, check| {
            // Dropout draws from the device's generator, whose state cannot be saved: it is
            // seeded per step instead, so a resumed run draws what an uninterrupted one does.
            device.seed(step_seed(seed, at.step));
            let parts = micro_ranges(batches, micro);
            let place = SumPlace::from(check.layout());
            accumulate(model, precision, place, parts, &mut output, || {
                check.check()
            })
        })?;
        let on_device =
            (accumulated.sums.deferred_loss_mean()).expect("a step has at least one micro-batch");
        let value = match read {
            true => Some(read_loss(on_device.clone(), at)?),
            false => None,
        };
        let updated = self.update((guard, rec), at, accumulated.grads)?;
        if let Some(flag) = updated.clipped {
            tally.add_clipped(flag);
        }
        if updated.outcome == GroupOutcome::Skip {
            tally.skipped += 1;
            stats.skipped_steps += 1;
            self.collapsed(at)?;
        }
        // The update allocates too (optimizer state on the first step).
        guard.after_step(rec, at.epoch, at.step)?;
        tally.steps += 1;
        tally.step_ended();
        stats.steps = at.step;
        tally.sums.merge(accumulated.sums);
        rec.step_done(at.epoch, tally.steps);
        crate::failpoint::pass("step");
        Ok(StepLoss { on_device, value })
    }

    /// The update half of step `at`: memory read before it, the schedule's next rate, and
    /// `grads` applied (loss scaling undone and checked, clipping), in host memory where the
    /// guard's layout says. A breach before the update leaves the model as it was.
    fn update(
        &mut self,
        (guard, rec): (&mut MemoryGuard, &mut RunRecorder),
        at: Position,
        grads: GradientsParams,
    ) -> Result<Updated<()>, Error> {
        guard.before_update(rec, at.epoch, at.step)?;
        let lr = self.schedule.advance();
        let model = (self.model.take()).expect("the model is back after every update");
        let (optimizer, precision, clip) = (&mut self.optimizer, &mut self.precision, self.clip);
        let updated = match guard.layout().optimizer_on_host() {
            true => (self.master).apply(model, grads, optimizer, (precision, clip), lr),
            false => apply_gradients(model, grads, optimizer, precision, clip, lr),
        }
        .map_err(Error::device)?;
        if let Some(ema) = self.ema.as_mut() {
            ema.update(&updated.model, at.step);
        }
        self.model = Some(updated.model);
        Ok(Updated {
            model: (),
            outcome: updated.outcome,
            clipped: updated.clipped,
        })
    }

    /// After a step that loss scaling skipped: an error where the scale has collapsed.
    fn collapsed(&self, at: Position) -> Result<(), Error> {
        let scaler = (self.precision.scaler()).expect("only loss scaling skips");
        if scaler.consecutive_skips() < MAX_CONSECUTIVE_SKIPS {
            return Ok(());
        }
        Err(TrainingError::LossScaleCollapsed {
            epoch: at.epoch,
            step: at.step,
            skips: scaler.consecutive_skips(),
            scale: scaler.scale(),
        }
        .into())
    }
}

/// Step `at`'s mean `loss`, read; an error where it is not finite.
pub(in crate::train) fn read_loss(loss: DeferredMean, at: Position) -> Result<f64, Error> {
    let loss = loss.read().map_err(Error::device)?;
    match loss.is_finite() {
        true => Ok(loss),
        false => Err(TrainingError::Diverged {
            epoch: at.epoch,
            step: at.step,
            loss,
        }
        .into()),
    }
}

/// The device generator's seed for step `step` of a run seeded with `seed` (SplitMix64's
/// finaliser, so that neighbouring steps get unrelated seeds).
pub(in crate::train) fn step_seed(seed: u64, step: usize) -> u64 {
    let mut z = seed ^ (step as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
