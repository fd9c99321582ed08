//! One optimizer step over a group of micro-batches, for any [`Task`].

use std::ops::Range;

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor};

use super::optimizer::state_copies;
use super::precision::{GroupOutcome, MixedPrecision};
use crate::config::{Offload, Precision, TrainConfig};
use crate::memory::{Footprint, MemoryMeter};
use crate::task::{MetricSums, StepOutput, Task};

mod clip;
mod host_update;
mod micro;
pub(in crate::train) mod protocol;
mod sum;

pub use clip::Clip;
pub use host_update::HostMaster;
pub use micro::{micro_batches, micro_ranges, Items};
pub use protocol::backward_share;
pub use sum::{GradientSum, HostSum, SumPlace};

/// What a step returns.
#[derive(Debug)]
pub struct Stepped<M> {
    /// The updated model.
    pub model: M,
    /// Mean loss over every sample of the group (without autodiff), shape `[1]`.
    pub loss: Tensor<1>,
    /// Samples in the group.
    pub samples: usize,
    /// Whether the update was applied (a loss-scaled step with non-finite gradients is not).
    pub outcome: GroupOutcome,
}

/// Gradients of one group of micro-batches, not yet applied.
#[derive(Debug)]
pub struct Accumulated {
    /// Gradient of the mean loss over the whole group.
    pub grads: GradientsParams,
    /// The group's loss and training metrics, summed over its samples (without autodiff).
    pub sums: MetricSums,
}

impl Accumulated {
    /// Mean loss over every sample of the group (without autodiff, unscaled), shape `[1]`.
    pub fn loss(&self) -> Tensor<1> {
        self.sums
            .mean_loss()
            .expect("a step has at least one micro-batch")
    }
}

/// Runs forward and backward on each micro-batch of `group` (lists of items, batched on
/// `device` by the task's batcher) and sums the gradients where `place` says: on the device
/// with Burn's [`GradientsAccumulator`](burn::optim::GradientsAccumulator), or in host memory
/// ([`GradientSum`]).
///
/// The accumulator sums, so each micro-batch's mean loss is weighted by its share of the
/// group's samples before `backward`. The summed gradient is then the gradient of the mean
/// loss over the whole group: the same update as one batch of all its samples, including a
/// short last micro-batch.
///
/// The forward and backward passes run in `precision`'s compute type, and `backward` is
/// called on the scaled loss; the gradients come back still scaled, for
/// [`MixedPrecision::finish_group`] to unscale once per group. The returned loss is unscaled.
///
/// `after_backward` runs after each backward pass, when that micro-batch's activations and
/// gradients are both alive; an error from it abandons the group (the model is untouched).
pub fn accumulate_gradients<T: Task, E>(
    task: &T,
    model: &T::Model,
    group: Vec<Vec<T::Item>>,
    device: &Device,
    precision: &MixedPrecision,
    place: SumPlace,
    after_backward: impl FnMut() -> Result<(), E>,
) -> Result<Accumulated, E> {
    let sizes: Vec<usize> = group.iter().map(Vec::len).collect();
    let mut items = Items::new(group, false);
    let cx = precision.compute();
    let parts = micro_ranges(&sizes, usize::MAX);
    let output = |model: &T::Model, rows| {
        let batch = task.batcher().batch(items.take(rows), device);
        task.step(model, batch, &cx)
    };
    accumulate(model, precision, place, parts, output, after_backward)
}

/// The gradients of one step over its micro-batches `parts` (ranges of the step's samples,
/// from [`micro_ranges`]), as every loop takes them: `output` gives a micro-batch's loss and
/// metrics from the model in the run's compute precision, the loss is weighted by the
/// micro-batch's share of the step's samples, scaled, and backpropagated into the step's sum,
/// kept where `place` says; `after_backward` runs after each backward pass.
pub(in crate::train) fn accumulate<M: Module, E>(
    model: &M,
    precision: &MixedPrecision,
    place: SumPlace,
    parts: Vec<Range<usize>>,
    mut output: impl FnMut(&M, Range<usize>) -> StepOutput,
    mut after_backward: impl FnMut() -> Result<(), E>,
) -> Result<Accumulated, E> {
    let samples: usize = parts.iter().map(ExactSizeIterator::len).sum();
    let mut sum = GradientSum::<M>::for_step(place, parts.len());
    let mut sums = MetricSums::default();
    for rows in parts {
        let n = rows.len();
        let out = output(&precision.compute_view(model), rows);
        // Keep the value, not the graph: a clone of the loss held across `backward` would
        // keep every saved activation alive until the gradients are taken (measured: +5.4 MiB
        // on W1's peak, and slower steps).
        sums.add(out.loss.clone(), out.metrics, n);
        let share = n as f64 / samples as f64;
        backward_share(
            &mut sum,
            model,
            precision,
            out.loss,
            share,
            &mut after_backward,
        )?;
    }
    Ok(Accumulated {
        grads: sum.take(model),
        sums,
    })
}

/// [`accumulate_gradients`] then one optimizer update (unless loss scaling skips it),
/// observing memory after each backward pass and after the update. For loops without memory
/// policies (benchmarks, tests).
#[allow(clippy::too_many_arguments)]
pub fn accumulated_step<T: Task>(
    task: &T,
    model: T::Model,
    optimizer: &mut ModuleOptimizer,
    lr: f64,
    group: Vec<Vec<T::Item>>,
    device: &Device,
    precision: &mut MixedPrecision,
    probe: &mut MemoryMeter,
) -> Result<Stepped<T::Model>, burn::tensor::ExecutionError> {
    let Ok(acc) = accumulate_gradients(
        task,
        &model,
        group,
        device,
        precision,
        SumPlace::default(),
        || {
            probe.observe();
            Ok::<(), std::convert::Infallible>(())
        },
    );
    let (loss, samples) = (acc.loss(), acc.sums.samples());
    let applied = apply_gradients(model, acc.grads, optimizer, precision, None, lr)?;
    probe.observe();
    Ok(Stepped {
        model: applied.model,
        loss,
        samples,
        outcome: applied.outcome,
    })
}

/// What [`apply_gradients`] did.
#[derive(Debug)]
pub struct Updated<M> {
    /// The model after the update (unchanged if skipped).
    pub model: M,
    /// Whether the update was applied.
    pub outcome: GroupOutcome,
    /// With clipping, on an applied step: 1.0 if the gradient was clipped, else 0.0, on the
    /// device, shape `[1]`.
    pub clipped: Option<Tensor<1>>,
}

/// Ends one optimizer step over a group's accumulated gradient: loss scaling undone and
/// checked (a step with a non-finite gradient is skipped), then the whole step's gradient
/// clipped, then one update at `lr`.
pub fn apply_gradients<M: Module>(
    model: M,
    mut grads: GradientsParams,
    optimizer: &mut ModuleOptimizer,
    precision: &mut MixedPrecision,
    clip: Option<Clip>,
    lr: f64,
) -> Result<Updated<M>, burn::tensor::ExecutionError> {
    let outcome = precision.finish_group(&mut grads, &model)?;
    if outcome == GroupOutcome::Skip {
        return Ok(Updated {
            model,
            outcome,
            clipped: None,
        });
    }
    let clipped = clip.and_then(|clip| clip.apply(&mut grads, &model));
    Ok(Updated {
        model: optimizer.step(lr, model, grads),
        outcome,
        clipped,
    })
}

/// Bytes that training `model` will add at rest on its device to what its parameters already
/// hold: the f32 gradients (twice with accumulation, unless the sum is offloaded to the host)
/// and the optimizer's state (unless it is offloaded), which the first step allocates.
pub fn resting_bytes<M: Module>(model: &M, config: &TrainConfig) -> u64 {
    let f = footprint(model, config, None);
    f.gradients + f.device_optimizer()
}

/// What training `model` under `config` holds by kind, from the parameters' sizes: the
/// weights (and a compute copy of 2 bytes a value in bf16 or f16), the gradient sets a step
/// holds (f32; two with accumulation, the sum and the micro-batch's own, unless the sum is
/// offloaded to the host) and the optimizer's state (with where `train.offload` keeps it);
/// `data`: the dataset's bytes, where counted.
pub fn footprint<M: Module>(model: &M, config: &TrainConfig, data: Option<u64>) -> Footprint {
    let params = model.num_params() as u64;
    let copy = match config.precision {
        Precision::F32 => 0,
        Precision::Bf16 | Precision::F16 => params * 2,
    };
    let host_sum = config.offload.gradients == Offload::Host;
    let grad_sets = if config.accumulation_steps > 1 && !host_sum {
        2
    } else {
        1
    };
    Footprint {
        weights: parameter_bytes(model),
        compute_copy: copy,
        gradients: params * 4 * grad_sets,
        gradient_sets: grad_sets,
        host_sum,
        optimizer: params * 4 * state_copies(config),
        host_optimizer: config.offload.optimizer == Offload::Host,
        data,
        average: match config.ema {
            Some(_) => parameter_bytes(model),
            None => 0,
        },
        host_average: (config.ema.as_ref())
            .is_some_and(|e| e.device == crate::config::EmaDevice::Host),
    }
}

/// The bytes of `model`'s float parameters, each at its own dtype's size.
fn parameter_bytes<M: Module>(model: &M) -> u64 {
    struct Bytes(u64);
    impl ModuleVisitor for Bytes {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let value = param.val();
            self.0 += (value.shape().num_elements() * value.dtype().size()) as u64;
        }
    }
    let mut bytes = Bytes(0);
    model.visit(&mut bytes);
    bytes.0
}

#[cfg(test)]
mod tests;
