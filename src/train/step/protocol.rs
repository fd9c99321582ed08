//! One optimizer step as every loop takes it (the trainer's and a hand loop's, both through
//! the learner's `step`), in these calls:
//!
//! 1. [`MemoryGuard::run_step`](crate::train::MemoryGuard::run_step) runs the gradient half
//!    under the limit (retried with smaller micro-batches where the limit shrinks them), each
//!    micro-batch's mean loss weighted by its share of the batch, scaled and backpropagated
//!    into the step's sum by [`backward_share`], with memory checked after each backward pass;
//! 2. the learner's update reads memory before it, takes the schedule's rate, and applies the
//!    sum ([`apply_gradients`](super::apply_gradients): loss scaling undone and checked,
//!    clipping), on the device or, where the layout says, in host memory
//!    ([`HostMaster`](super::HostMaster));
//! 3. the learner counts a skipped step, then
//!    [`MemoryGuard::after_step`](crate::train::MemoryGuard::after_step) reads memory after it.

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::Tensor;

use super::GradientSum;
use crate::train::precision::MixedPrecision;

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
    // A whole batch's share is 1: no multiplication (two kernels a step on a GPU, forward and
    // back), and the same figures, since `x · 1 = x` exactly.
    let weighted = match share == 1.0 {
        true => loss,
        false => loss.mul_scalar(share),
    };
    let grads = precision.scale_loss(weighted).backward();
    after_backward()?;
    sum.add(model, GradientsParams::from_grads(grads, model));
    Ok(())
}
