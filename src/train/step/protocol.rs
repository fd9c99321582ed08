//! One optimizer step as every loop takes it, the trainer's (`epochs/step.rs`) and a hand
//! loop's ([`HandLoop::step`](crate::HandLoop::step)), in the same calls:
//!
//! 1. [`MemoryGuard::run_step`] runs the gradient half under the limit (retried with smaller
//!    micro-batches where the limit shrinks them), each micro-batch's mean loss weighted by
//!    its share of the batch, scaled and backpropagated into the step's sum by
//!    [`backward_share`], with memory checked after each backward pass;
//! 2. [`Updater::update`] reads memory before the update, takes the schedule's rate, and
//!    applies the sum ([`apply_gradients`]: loss scaling undone and checked, clipping), on
//!    the device or, where the layout says, in host memory ([`HostMaster`]);
//! 3. the loop counts a skipped step, then [`MemoryGuard::after_step`] reads memory after it.

use burn::module::Module;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::Tensor;

use super::{apply_gradients, Clip, GradientSum, HostMaster, Updated};
use crate::error::Error;
use crate::train::decide::Schedule;
use crate::train::precision::MixedPrecision;
use crate::train::{MemoryGuard, RunRecorder};

/// Backpropagates one micro-batch's mean `loss` (with its graph), weighted by its `share` of
/// the batch's samples and scaled by the loss scaler, into the step's `sum`, calling
/// `after_backward` while that micro-batch's activations and gradients are both alive.
pub fn backward_share<M: Module, E>(
    sum: &mut GradientSum<M>,
    model: &M,
    precision: &MixedPrecision,
    loss: Tensor<1>,
    share: f64,
    after_backward: impl FnOnce() -> Result<(), E>,
) -> Result<(), E> {
    let grads = precision.scale_loss(loss.mul_scalar(share)).backward();
    after_backward()?;
    sum.add(model, GradientsParams::from_grads(grads, model));
    Ok(())
}

/// What updates the model: the optimizer, the loss scaling, the schedule and clipping, and
/// the master copy of the weights for an update in host memory.
pub(in crate::train) struct Updater<'a, M> {
    pub optimizer: &'a mut ModuleOptimizer,
    pub master: &'a mut HostMaster<M>,
    pub precision: &'a mut MixedPrecision,
    pub schedule: &'a mut Schedule,
    pub clip: Option<Clip>,
}

impl<M: Module> Updater<'_, M> {
    /// The update half of step `step` of `epoch`: memory read before it, the schedule's next
    /// rate, and `grads` applied to `model`, in host memory where the guard's layout says.
    pub(in crate::train) fn update(
        self,
        (guard, recorder): (&mut MemoryGuard, &mut RunRecorder),
        (epoch, step): (usize, usize),
        model: M,
        grads: GradientsParams,
    ) -> Result<Updated<M>, Error> {
        guard.before_update(recorder, epoch, step)?;
        let lr = self.schedule.advance();
        let (optimizer, precision, clip) = (self.optimizer, self.precision, self.clip);
        match guard.layout().optimizer_on_host() {
            true => (self.master).apply(model, grads, optimizer, (precision, clip), lr),
            false => apply_gradients(model, grads, optimizer, precision, clip, lr),
        }
        .map_err(Error::device)
    }
}
