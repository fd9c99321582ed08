//! One optimizer step over a group of micro-batches.

use burn::nn::loss::CrossEntropyLoss;
use burn::optim::{
    decay::WeightDecayConfig, AdamConfig, GradientsAccumulator, GradientsParams, ModuleOptimizer,
    SgdConfig,
};
use burn::tensor::Tensor;

use crate::config::{OptimizerKind, TrainConfig};
use crate::data::ClassificationBatch;
use crate::memory::MemoryProbe;
use crate::model::Model;

/// Builds the configured optimizer.
pub fn build_optimizer(config: &TrainConfig) -> ModuleOptimizer {
    let decay = (config.weight_decay > 0.0).then(|| WeightDecayConfig::new(config.weight_decay as f32));
    match config.optimizer {
        OptimizerKind::Adam => AdamConfig::new().with_weight_decay(decay).init(),
        OptimizerKind::Sgd => SgdConfig::new().with_weight_decay(decay).init(),
    }
}

/// What a step returns.
#[derive(Debug)]
pub struct StepOutput {
    /// The updated model.
    pub model: Model,
    /// Mean loss over every sample of the group (detached), shape `[1]`.
    pub loss: Tensor<1>,
    /// Samples in the group.
    pub samples: usize,
}

/// Runs forward and backward on each micro-batch of `group`, accumulates the gradients with
/// Burn's [`GradientsAccumulator`], and applies one optimizer update.
///
/// The accumulator sums, so each micro-batch's mean loss is weighted by its share of the
/// group's samples before `backward`. The summed gradient is then the gradient of the mean
/// loss over the whole group: the same update as one batch of all its samples, including a
/// short last group.
pub fn accumulated_step(
    model: Model,
    optimizer: &mut ModuleOptimizer,
    lr: f64,
    loss_fn: &CrossEntropyLoss,
    group: &[ClassificationBatch],
    probe: &mut MemoryProbe,
) -> StepOutput {
    let samples: usize = group.iter().map(ClassificationBatch::len).sum();
    let mut accumulator = GradientsAccumulator::<Model>::new();
    let mut total_loss: Option<Tensor<1>> = None;
    for batch in group {
        let logits = model.forward(batch.inputs.clone());
        let loss = loss_fn
            .forward(logits, batch.targets.clone())
            .mul_scalar(batch.len() as f64 / samples as f64);
        let grads = loss.backward();
        // The activations of this micro-batch and its gradients are both alive here.
        probe.observe();
        accumulator.accumulate(&model, GradientsParams::from_grads(grads, &model));
        let loss = loss.detach();
        total_loss = Some(match total_loss {
            Some(sum) => sum + loss,
            None => loss,
        });
    }
    let model = optimizer.step(lr, model, accumulator.grads());
    probe.observe();
    StepOutput {
        model,
        loss: total_loss.expect("a step has at least one micro-batch"),
        samples,
    }
}
