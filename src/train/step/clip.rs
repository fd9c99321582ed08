//! Gradient clipping of a whole optimizer step: applied once to the accumulated gradient
//! (after loss scaling is undone), so a step of k micro-batches is clipped as the one large
//! batch would be.
//!
//! - `clip_grad_value`: every element into `[-v, v]`, by Burn's [`GradientClipping::Value`].
//! - `clip_grad_norm`: the global norm, PyTorch's `clip_grad_norm_` (Lightning's
//!   `gradient_clip_val`, Keras's `global_clipnorm`): every gradient is scaled by
//!   `min(1, max_norm / (‖g‖ + 1e-6))`, where `‖g‖` is the L2 norm of all the step's
//!   gradients together. Burn's [`GradientClipping::Norm`] clips each parameter's tensor by its
//!   own norm (Keras's per-variable `clipnorm`), which changes the gradient's direction; that
//!   is not what `clip_grad_norm` means to PyTorch users, so the global scale is computed here.
//!
//! Whether a step was clipped stays on the device (a 0 or 1 in a `[1]` tensor), to be summed
//! over the epoch and read once at its end: reading it each step would wait for the device.

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::grad_clipping::GradientClipping;
use burn::optim::GradientsParams;
use burn::tensor::{Bool, Tensor};

use crate::config::TrainConfig;

/// PyTorch's term against a zero norm.
const NORM_EPS: f64 = 1e-6;

/// How a step's gradient is clipped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Clip {
    /// Scale the whole gradient down to this global L2 norm.
    Norm(f64),
    /// Clamp each element to `[-v, v]`.
    Value(f64),
}

impl Clip {
    /// As `[train]` configures it, if at all.
    pub fn from_config(config: &TrainConfig) -> Option<Self> {
        match (config.clip_grad_norm, config.clip_grad_value) {
            (Some(norm), _) => Some(Clip::Norm(norm)),
            (None, Some(value)) => Some(Clip::Value(value)),
            (None, None) => None,
        }
    }

    /// Clips the gradients of `model`'s parameters in `grads`, and returns on the device
    /// whether anything was clipped (1.0) or not (0.0), shape `[1]`; `None` if `grads` holds
    /// no gradient of `model`.
    pub fn apply<M: Module>(&self, grads: &mut GradientsParams, model: &M) -> Option<Tensor<1>> {
        let clipped = match *self {
            Clip::Norm(max_norm) => {
                let mut squares = SumOfSquares { grads, sum: None };
                model.visit(&mut squares);
                let sum = squares.sum?;
                let norm = sum.sqrt();
                let over = norm.clone().greater_elem(max_norm);
                let factor = norm
                    .add_scalar(NORM_EPS)
                    .recip()
                    .mul_scalar(max_norm)
                    .clamp_max(1.0);
                model.visit(&mut Scale { grads, factor });
                Some(over)
            }
            Clip::Value(bound) => {
                let mut clamp = Clamp {
                    grads,
                    clipping: GradientClipping::Value(bound as f32),
                    bound,
                    over: None,
                };
                model.visit(&mut clamp);
                clamp.over
            }
        };
        clipped.map(|over| over.float())
    }
}

fn or(acc: Option<Tensor<1, Bool>>, next: Tensor<1, Bool>) -> Tensor<1, Bool> {
    match acc {
        Some(acc) => acc.bool_or(next),
        None => next,
    }
}

/// Σ g² over every parameter's gradient.
struct SumOfSquares<'a> {
    grads: &'a GradientsParams,
    sum: Option<Tensor<1>>,
}

impl ModuleVisitor for SumOfSquares<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(grad) = self.grads.get::<D>(param.id) {
            let squares = grad.square().sum();
            self.sum = Some(match self.sum.take() {
                Some(sum) => sum.add(squares),
                None => squares,
            });
        }
    }
}

/// Multiplies every gradient by `factor` (shape `[1]`).
struct Scale<'a> {
    grads: &'a mut GradientsParams,
    factor: Tensor<1>,
}

impl ModuleVisitor for Scale<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(grad) = self.grads.remove::<D>(param.id) {
            let factor = self.factor.clone().unsqueeze::<D>();
            self.grads.register(param.id, grad.mul(factor));
        }
    }
}

/// Clamps every gradient with Burn's value clipping, noting whether any element was out of
/// bounds.
struct Clamp<'a> {
    grads: &'a mut GradientsParams,
    clipping: GradientClipping,
    bound: f64,
    over: Option<Tensor<1, Bool>>,
}

impl ModuleVisitor for Clamp<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(grad) = self.grads.remove::<D>(param.id) {
            let over = grad.clone().abs().greater_elem(self.bound).any();
            self.over = Some(or(self.over.take(), over));
            self.grads
                .register(param.id, self.clipping.clip_gradient(grad));
        }
    }
}

#[cfg(test)]
mod tests;
