//! Mixed precision: low-precision compute over f32 master weights, with dynamic loss scaling.
//!
//! Burn 0.22 has no autocast and no gradient scaler, so tidemark does what TensorFlow's
//! `mixed_float16` policy and PyTorch's autocast with `GradScaler` do, with Burn's own
//! differentiable cast:
//!
//! - The model's parameters stay f32, and so does the optimizer state. For each micro-batch a
//!   compute copy of the model is made by casting every parameter to bf16 or f16
//!   ([`Tensor::cast`]); the inputs are cast too, and the forward and backward passes run in
//!   that precision. The backward pass of a cast casts the gradient back, so the gradients
//!   that reach the f32 parameters are f32.
//! - The logits are cast back to f32 and the loss is computed in f32.
//! - With loss scaling, the loss is multiplied by the scale before `backward`, so that small
//!   gradients stay representable in f16; the accumulated gradients are divided by it once per
//!   optimizer step and checked. A step with any non-finite gradient is skipped, the whole
//!   accumulated group with it, and the scale halves; after `loss_scale_growth_interval` clean
//!   steps it doubles ([`LossScaler`]).

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::{Bool, Device, ExecutionError, FloatDType, Tensor};

use crate::config::{LossScaling, Precision, TrainConfig};
use crate::task::Compute;

/// Consecutive skipped steps after which a run stops: the scale has then fallen by 2^50, and
/// gradients that are still not finite will not become finite at a smaller one.
pub const MAX_CONSECUTIVE_SKIPS: usize = 50;

/// The dynamic loss scale: a pure state machine, advanced once per optimizer step. A
/// checkpoint keeps it, so a resumed run scales as an uninterrupted one would.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LossScaler {
    scale: f64,
    growth_interval: usize,
    clean_steps: usize,
    consecutive_skips: usize,
}

impl LossScaler {
    /// Starts at `initial` and doubles after `growth_interval` clean steps.
    pub fn new(initial: f64, growth_interval: usize) -> Self {
        Self {
            scale: initial,
            growth_interval: growth_interval.max(1),
            clean_steps: 0,
            consecutive_skips: 0,
        }
    }

    /// The scale the next group's loss is multiplied by.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// Why a scaler read back from a checkpoint cannot go on, if it cannot: a scale that is
    /// not a finite number above 0, or no steps between two growths.
    pub(crate) fn invalid(&self) -> Option<String> {
        if !(self.scale.is_finite() && self.scale > 0.0) {
            return Some(format!(
                "scale is {}, not a finite number above 0",
                self.scale
            ));
        }
        (self.growth_interval == 0).then(|| "growth_interval is 0, not above 0".to_string())
    }

    /// Steps skipped in a row so far.
    pub fn consecutive_skips(&self) -> usize {
        self.consecutive_skips
    }

    /// Records one optimizer step's outcome and returns whether to apply it: a step whose
    /// gradients were all finite is applied (and may grow the scale); any other is skipped and
    /// halves the scale.
    pub fn update(&mut self, finite: bool) -> bool {
        if finite {
            self.consecutive_skips = 0;
            self.clean_steps += 1;
            if self.clean_steps == self.growth_interval {
                self.scale *= 2.0;
                self.clean_steps = 0;
            }
        } else {
            self.consecutive_skips += 1;
            self.clean_steps = 0;
            self.scale *= 0.5;
        }
        finite
    }
}

/// What a group's gradients came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupOutcome {
    /// Apply the update.
    Apply,
    /// Some gradient was not finite: discard the group.
    Skip,
}

/// A run's compute precision and, with loss scaling, its scaler.
#[derive(Debug, Clone)]
pub struct MixedPrecision {
    precision: Precision,
    scaler: Option<LossScaler>,
}

impl MixedPrecision {
    /// f32 throughout, no scaling: exactly the plain training step.
    pub fn f32() -> Self {
        Self {
            precision: Precision::F32,
            scaler: None,
        }
    }

    /// `precision` with an optional scaler.
    pub fn new(precision: Precision, scaler: Option<LossScaler>) -> Self {
        Self { precision, scaler }
    }

    /// As configured in `[train]`.
    pub fn from_config(config: &TrainConfig) -> Self {
        let scaler = (config.loss_scaling() == LossScaling::Dynamic)
            .then(|| LossScaler::new(config.initial_loss_scale, config.loss_scale_growth_interval));
        Self::new(config.precision, scaler)
    }

    /// The compute precision.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// The scaler, with loss scaling on.
    pub fn scaler(&self) -> Option<&LossScaler> {
        self.scaler.as_ref()
    }

    /// The compute dtype, `None` for f32 (the parameters' own).
    pub fn dtype(&self) -> Option<FloatDType> {
        dtype(self.precision)
    }

    /// The compute copy of `model`: every float parameter cast to the compute type (a clone
    /// in f32). The casts are autodiff operations, so gradients reach the f32 parameters.
    pub fn compute_model<M: Module>(&self, model: &M) -> M {
        match self.dtype() {
            None => model.clone(),
            Some(dtype) => model.clone().map(&mut CastParams(dtype)),
        }
    }

    /// The model a step computes with: `model` itself in f32, else its compute copy
    /// ([`compute_model`](Self::compute_model)), made for this step.
    pub fn compute_view<'a, M: Module>(&self, model: &'a M) -> std::borrow::Cow<'a, M> {
        match self.dtype() {
            None => std::borrow::Cow::Borrowed(model),
            Some(_) => std::borrow::Cow::Owned(self.compute_model(model)),
        }
    }

    /// Where a task's float tensors enter and leave the compute precision.
    pub fn compute(&self) -> Compute {
        Compute::new(self.dtype())
    }

    /// What `backward` is called on: the loss times the current scale.
    pub fn scale_loss(&self, loss: Tensor<1>) -> Tensor<1> {
        match &self.scaler {
            Some(scaler) => loss.mul_scalar(scaler.scale()),
            None => loss,
        }
    }

    /// Ends a group: with loss scaling, divides every gradient by the scale, checks them
    /// (one read from the device), and advances the scaler. Without it, always `Apply`.
    pub fn finish_group<M: Module>(
        &mut self,
        grads: &mut GradientsParams,
        model: &M,
    ) -> Result<GroupOutcome, ExecutionError> {
        let Some(scaler) = &mut self.scaler else {
            return Ok(GroupOutcome::Apply);
        };
        let mut unscale = Unscale {
            grads,
            factor: 1.0 / scaler.scale(),
            non_finite: None,
        };
        model.visit(&mut unscale);
        let finite = match unscale.non_finite {
            Some(flag) => {
                crate::memory::synced();
                !flag.try_into_data()?.iter::<bool>().any(|b| b)
            }
            None => true,
        };
        Ok(if scaler.update(finite) {
            GroupOutcome::Apply
        } else {
            GroupOutcome::Skip
        })
    }
}

/// The Burn dtype of a precision; `None` for f32, which needs no cast.
pub fn dtype(precision: Precision) -> Option<FloatDType> {
    match precision {
        Precision::F32 => None,
        Precision::Bf16 => Some(FloatDType::BF16),
        Precision::F16 => Some(FloatDType::F16),
    }
}

/// Whether `device` computes in `precision`.
pub fn supported(device: &Device, precision: Precision) -> bool {
    dtype(precision).is_none_or(|dtype| device.supports_dtype(dtype))
}

/// Maps every float parameter to a cast of it. The cast is an autodiff operation, so the
/// gradient reaches the original (f32) parameter.
struct CastParams(FloatDType);

impl ModuleMapper for CastParams {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let dtype = self.0;
        param.map(|tensor| tensor.cast(dtype))
    }
}

/// Multiplies each parameter's gradient by `factor`, and gathers on the device whether any
/// element of any gradient is not finite.
struct Unscale<'a> {
    grads: &'a mut GradientsParams,
    factor: f64,
    non_finite: Option<Tensor<1, Bool>>,
}

impl ModuleVisitor for Unscale<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let Some(grad) = self.grads.remove::<D>(param.id) else {
            return;
        };
        let bad = grad.clone().is_finite().bool_not().any();
        self.non_finite = Some(match self.non_finite.take() {
            Some(acc) => acc.bool_or(bad),
            None => bad,
        });
        self.grads.register(param.id, grad.mul_scalar(self.factor));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_halves_on_overflow_and_doubles_after_clean_steps() {
        let mut s = LossScaler::new(1024.0, 3);
        assert!(!s.update(false));
        assert_eq!(s.scale(), 512.0);
        assert!(s.update(true) && s.update(true));
        assert_eq!(s.scale(), 512.0, "two clean steps are not yet three");
        assert!(s.update(true));
        assert_eq!(s.scale(), 1024.0);
        // An overflow restarts the count.
        s.update(true);
        s.update(true);
        s.update(false);
        s.update(true);
        s.update(true);
        assert_eq!(s.scale(), 512.0);
        s.update(true);
        assert_eq!(s.scale(), 1024.0);
    }

    #[test]
    fn consecutive_skips_are_counted_until_a_clean_step() {
        let mut s = LossScaler::new(8.0, 2000);
        for _ in 0..3 {
            s.update(false);
        }
        assert_eq!(s.consecutive_skips(), 3);
        assert_eq!(s.scale(), 1.0);
        s.update(true);
        assert_eq!(s.consecutive_skips(), 0);
    }

    #[test]
    fn flex_supports_both_half_precisions() {
        let device = Device::flex();
        for p in [Precision::F32, Precision::Bf16, Precision::F16] {
            assert!(supported(&device, p), "{p}");
        }
    }
}
