//! One optimizer step over a group of micro-batches, for any [`Task`].

use burn::module::Module;
use burn::optim::{
    decay::WeightDecayConfig, AdamConfig, GradientsAccumulator, GradientsParams, ModuleOptimizer,
    SgdConfig,
};
use burn::tensor::{Device, Tensor};

use super::precision::{GroupOutcome, MixedPrecision};
use crate::config::{OptimizerKind, TrainConfig};
use crate::memory::MemoryProbe;
use crate::task::{Metric, Task};

/// Builds the configured optimizer.
pub fn build_optimizer(config: &TrainConfig) -> ModuleOptimizer {
    let decay =
        (config.weight_decay > 0.0).then(|| WeightDecayConfig::new(config.weight_decay as f32));
    match config.optimizer {
        OptimizerKind::Adam => AdamConfig::new().with_weight_decay(decay).init(),
        OptimizerKind::Sgd => SgdConfig::new().with_weight_decay(decay).init(),
    }
}

/// What a step returns.
#[derive(Debug)]
pub struct Stepped<M> {
    /// The updated model.
    pub model: M,
    /// Mean loss over every sample of the group (detached), shape `[1]`.
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
    /// Mean loss over every sample of the group (detached), shape `[1]`.
    pub loss: Tensor<1>,
    /// The task's training metrics, each a mean over the group's samples (detached).
    pub metrics: Vec<Metric>,
    /// Samples in the group.
    pub samples: usize,
}

/// Cuts each loader batch of `group` into micro-batches of at most `size` items. A short
/// loader batch (the epoch's last) stays short rather than borrowing from another.
pub fn micro_batches<I: Clone>(group: &[Vec<I>], size: usize) -> Vec<&[I]> {
    group
        .iter()
        .flat_map(|batch| batch.chunks(size.max(1)))
        .collect()
}

/// Runs forward and backward on each micro-batch of `group` (lists of items, batched on
/// `device` by the task's batcher) and accumulates the gradients with Burn's
/// [`GradientsAccumulator`].
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
    group: &[&[T::Item]],
    device: &Device,
    precision: &MixedPrecision,
    mut after_backward: impl FnMut() -> Result<(), E>,
) -> Result<Accumulated, E> {
    let samples: usize = group.iter().map(|items| items.len()).sum();
    let mut accumulator = GradientsAccumulator::<T::Model>::new();
    let mut total_loss: Option<Tensor<1>> = None;
    let mut metrics: Vec<Metric> = Vec::new();
    let cx = precision.compute();
    for items in group {
        let share = items.len() as f64 / samples as f64;
        let batch = task.batcher().batch(items.to_vec(), device);
        let cast;
        let compute_model = match precision.dtype() {
            None => model,
            Some(_) => {
                cast = precision.compute_model(model);
                &cast
            }
        };
        let out = task.step(compute_model, batch, &cx);
        let loss = out.loss.mul_scalar(share);
        // Keep the value, not the graph: a clone of the loss held across `backward` would
        // keep every saved activation alive until the gradients are taken (measured: +5.4 MiB
        // on W1's peak, and slower steps).
        let value = loss.clone().detach();
        for metric in out.metrics {
            let weighted = metric.value.detach().mul_scalar(share);
            match metrics.iter_mut().find(|m| m.name == metric.name) {
                Some(m) => m.value = m.value.clone() + weighted,
                None => metrics.push(Metric {
                    value: weighted,
                    ..metric
                }),
            }
        }
        let grads = precision.scale_loss(loss).backward();
        after_backward()?;
        accumulator.accumulate(model, GradientsParams::from_grads(grads, model));
        total_loss = Some(match total_loss {
            Some(sum) => sum + value,
            None => value,
        });
    }
    Ok(Accumulated {
        grads: accumulator.grads(),
        loss: total_loss.expect("a step has at least one micro-batch"),
        metrics,
        samples,
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
    group: &[&[T::Item]],
    device: &Device,
    precision: &mut MixedPrecision,
    probe: &mut MemoryProbe,
) -> Result<Stepped<T::Model>, burn::tensor::ExecutionError> {
    let Ok(mut acc) = accumulate_gradients(task, &model, group, device, precision, || {
        probe.observe();
        Ok::<(), std::convert::Infallible>(())
    });
    let outcome = precision.finish_group(&mut acc.grads, &model)?;
    let model = match outcome {
        GroupOutcome::Apply => optimizer.step(lr, model, acc.grads),
        GroupOutcome::Skip => model,
    };
    probe.observe();
    Ok(Stepped {
        model,
        loss: acc.loss,
        samples: acc.samples,
        outcome,
    })
}

/// Bytes a model of `model`'s size needs at rest once training starts: its f32 parameters,
/// their gradients (twice with accumulation) and the optimizer's state.
pub fn resting_bytes<M: Module>(model: &M, config: &TrainConfig) -> u64 {
    let param_bytes = model.num_params() as u64 * 4;
    let grad_copies = if config.accumulation_steps > 1 { 2 } else { 1 };
    let optimizer_copies = match config.optimizer {
        OptimizerKind::Adam => 2,
        OptimizerKind::Sgd => 0,
    };
    param_bytes * (grad_copies + optimizer_copies)
}

#[cfg(test)]
mod tests {
    use burn::module::{Module, ModuleVisitor, Param};
    use burn::tensor::Device;

    use super::*;
    use crate::config::{Activation, LossScaling, MlpConfig, Precision, SyntheticConfig};
    use crate::data::{generate, Sample};
    use crate::model::{Cnn, Mlp, Network};
    use crate::task::Classify;
    use crate::train::LossScaler;

    struct Flatten(Vec<f32>);

    impl ModuleVisitor for Flatten {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            self.0
                .extend(param.val().into_data().convert::<f32>().iter::<f32>());
        }
    }

    fn weights<M: Module>(model: &M) -> Vec<f32> {
        let mut v = Flatten(Vec::new());
        model.visit(&mut v);
        v.0
    }

    fn samples(n: usize) -> Vec<Sample> {
        generate(&SyntheticConfig {
            samples: n,
            features: 20,
            classes: 5,
            seed: 11,
            noise: 1.0,
        })
    }

    /// A fresh model. Burn's flex RNG is global and tests run in parallel, so a seed does not
    /// make two initialisations equal; the comparisons below clone one model instead.
    fn model(device: &Device) -> Mlp {
        let config = MlpConfig {
            hidden: vec![32, 16],
            activation: Activation::Relu,
            dropout: 0.0,
        };
        Mlp::new(&config, 20, 5, device)
    }

    /// The classification task, for its step; the model and data come from the tests.
    fn task<N: Network>() -> Classify<N> {
        Classify::new(Vec::new(), Vec::new(), |_| {
            unreachable!("tests pass their model")
        })
    }

    /// `data` cut into consecutive micro-batches of `sizes`.
    fn cut<'a>(data: &'a [Sample], sizes: &[usize]) -> Vec<&'a [Sample]> {
        let mut offset = 0;
        sizes
            .iter()
            .map(|&n| {
                offset += n;
                &data[offset - n..offset]
            })
            .collect()
    }

    /// Weights after one optimizer step from `model` over `data` cut into micro-batches of
    /// `sizes`, and the step's loss.
    fn one_update<N: Network>(
        config: &TrainConfig,
        model: N,
        data: &[Sample],
        sizes: &[usize],
    ) -> (Vec<f32>, f32) {
        one_update_in(&mut MixedPrecision::f32(), config, model, data, sizes)
    }

    fn one_update_in<N: Network>(
        precision: &mut MixedPrecision,
        config: &TrainConfig,
        model: N,
        data: &[Sample],
        sizes: &[usize],
    ) -> (Vec<f32>, f32) {
        let device = Device::flex().autodiff();
        let mut optimizer = build_optimizer(config);
        let mut probe = MemoryProbe::new(&device);
        let out = accumulated_step(
            &task::<N>(),
            model,
            &mut optimizer,
            config.lr,
            &cut(data, sizes),
            &device,
            precision,
            &mut probe,
        )
        .unwrap();
        assert_eq!(out.outcome, GroupOutcome::Apply);
        assert_eq!(out.samples, sizes.iter().sum::<usize>());
        let loss = out
            .loss
            .into_data()
            .convert::<f32>()
            .iter::<f32>()
            .next()
            .unwrap();
        (weights(&out.model), loss)
    }

    fn train_config(optimizer: OptimizerKind, weight_decay: f64) -> TrainConfig {
        // SGD gets a larger rate so that its single update is as visible as Adam's.
        let lr = match optimizer {
            OptimizerKind::Adam => 1e-2,
            OptimizerKind::Sgd => 0.5,
        };
        TrainConfig {
            epochs: 1,
            batch_size: 64,
            accumulation_steps: 4,
            optimizer,
            lr,
            weight_decay,
            precision: Precision::F32,
            loss_scaling: LossScaling::Off,
            initial_loss_scale: 65536.0,
            loss_scale_growth_interval: 2000,
            gradient_checkpointing: false,
        }
    }

    fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    }

    fn assert_same_update(config: &TrainConfig, sizes: &[usize]) {
        let n: usize = sizes.iter().sum();
        let data = samples(n);
        let start = model(&Device::flex().autodiff());
        let initial = weights(&start);
        let (large, large_loss) = one_update(config, start.clone(), &data, &[n]);
        let (accumulated, acc_loss) = one_update(config, start, &data, sizes);
        let moved = max_abs_diff(&initial, &large);
        assert!(moved > 1e-3, "the update must be visible, moved {moved}");
        let diff = max_abs_diff(&large, &accumulated);
        assert!(
            diff < 1e-5,
            "{:?} {sizes:?}: accumulated differs from one batch of {n} by {diff}",
            config.optimizer
        );
        assert!(
            (large_loss - acc_loss).abs() < 1e-5,
            "loss {large_loss} vs {acc_loss}"
        );
    }

    #[test]
    fn accumulation_matches_the_large_batch_with_adam() {
        assert_same_update(&train_config(OptimizerKind::Adam, 0.0), &[64, 64, 64, 64]);
    }

    #[test]
    fn accumulation_matches_the_large_batch_with_sgd_and_weight_decay() {
        assert_same_update(&train_config(OptimizerKind::Sgd, 1e-2), &[64, 64, 64, 64]);
    }

    #[test]
    fn a_short_last_micro_batch_is_weighted_by_its_size() {
        assert_same_update(&train_config(OptimizerKind::Sgd, 0.0), &[64, 64, 32]);
    }

    /// `|a - b| / |b - initial|`, in the L2 norm: how far apart two updates from `initial`
    /// are, relative to the size of the second.
    fn relative_update_diff(initial: &[f32], a: &[f32], b: &[f32]) -> f32 {
        let norm = |v: Vec<f32>| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        let diff = norm(a.iter().zip(b).map(|(x, y)| x - y).collect());
        diff / norm(b.iter().zip(initial).map(|(x, y)| x - y).collect())
    }

    #[test]
    fn accumulation_in_f16_matches_the_large_batch_in_f16() {
        // Measured over ten runs (random initialisations): accumulated vs large batch, both in
        // f16, differ by at most 0.1% of the update (L2), while f16 itself is 0.04-7% away
        // from the f32 update (Adam amplifies the rounding of near-zero gradients, whose
        // update is their sign). The bound is 1%.
        let sizes = [64, 64, 64, 64];
        let data = samples(256);
        let f16 = || MixedPrecision::new(Precision::F16, Some(LossScaler::new(1024.0, 2000)));
        for optimizer in [OptimizerKind::Sgd, OptimizerKind::Adam] {
            let config = train_config(optimizer, 0.0);
            let start = model(&Device::flex().autodiff());
            let initial = weights(&start);
            let (exact, exact_loss) = one_update(&config, start.clone(), &data, &[256]);
            let (large, large_loss) =
                one_update_in(&mut f16(), &config, start.clone(), &data, &[256]);
            let (acc, acc_loss) = one_update_in(&mut f16(), &config, start, &data, &sizes);
            let f16_error = relative_update_diff(&initial, &large, &exact);
            let diff = relative_update_diff(&initial, &acc, &large);
            assert!(
                diff < 0.01,
                "{optimizer:?}: f16 accumulated differs from the f16 large batch by {diff} of \
                 the update (f16 vs f32: {f16_error})"
            );
            assert!(f16_error < 0.25, "{optimizer:?}: f16 vs f32 {f16_error}");
            assert!(
                (large_loss - acc_loss).abs() < 1e-3,
                "{large_loss} vs {acc_loss}"
            );
            assert!(
                (exact_loss - large_loss).abs() < 1e-2,
                "{exact_loss} vs {large_loss}"
            );
            assert!(acc.iter().all(|w| w.is_finite()));
        }
    }

    #[test]
    fn overflows_skip_the_step_then_the_scale_settles_and_no_weight_is_ever_nan() {
        let config = train_config(OptimizerKind::Adam, 0.0);
        let device = Device::flex().autodiff();
        let data = samples(256);
        let group: Vec<&[Sample]> = data.chunks(64).collect();
        let mut precision =
            MixedPrecision::new(Precision::F16, Some(LossScaler::new(2f64.powi(40), 2000)));
        let mut optimizer = build_optimizer(&config);
        let mut probe = MemoryProbe::new(&device);
        let mut model = model(&device);
        let (mut skipped, mut applied, mut losses) = (0, 0, Vec::new());
        for _ in 0..40 {
            let before = weights(&model);
            let out = accumulated_step(
                &task::<Mlp>(),
                model,
                &mut optimizer,
                config.lr,
                &group,
                &device,
                &mut precision,
                &mut probe,
            )
            .unwrap();
            match out.outcome {
                // A skipped step changes nothing, and halves the scale.
                GroupOutcome::Skip => {
                    assert_eq!(weights(&out.model), before, "step {}", skipped + applied);
                    skipped += 1;
                    assert_eq!(precision.scaler().unwrap().scale(), 2f64.powi(40 - skipped));
                }
                GroupOutcome::Apply => applied += 1,
            }
            model = out.model;
            assert!(weights(&model).iter().all(|w| w.is_finite()));
            losses.push(out.loss.into_scalar::<f32>());
        }
        let scale = precision.scaler().unwrap().scale();
        assert!(
            skipped > 0 && applied > 0,
            "skipped {skipped}, applied {applied}"
        );
        assert_eq!(scale, 2f64.powi(40 - skipped));
        assert!(
            losses.last().unwrap() < &(losses[0] * 0.9),
            "training proceeds after the skips: {losses:?}"
        );
    }

    #[test]
    fn cnn_accumulation_4x16_matches_the_batch_of_64() {
        // Without batch norm: each micro-batch normalised by its own statistics would make
        // the two updates differ by design, as in any framework.
        let cnn = crate::config::CnnConfig {
            input: [1, 4, 5],
            channels: vec![4, 8],
            kernel_size: 3,
            pool: 2,
            batch_norm: false,
            activation: Activation::Relu,
            dropout: 0.0,
        };
        let device = Device::flex().autodiff();
        let start = Cnn::new(&cnn, 5, &device);
        let data = samples(64);
        for optimizer in [OptimizerKind::Sgd, OptimizerKind::Adam] {
            let config = train_config(optimizer, 0.0);
            let initial = weights(&start);
            let (large, large_loss) = one_update(&config, start.clone(), &data, &[64]);
            let (acc, acc_loss) = one_update(&config, start.clone(), &data, &[16, 16, 16, 16]);
            assert!(
                max_abs_diff(&initial, &large) > 1e-3,
                "the update is visible"
            );
            let diff = max_abs_diff(&large, &acc);
            assert!(
                diff < 1e-5,
                "{optimizer:?}: 4 x 16 differs from 64 by {diff}"
            );
            assert!((large_loss - acc_loss).abs() < 1e-5);
        }
    }

    #[test]
    fn summing_unscaled_losses_would_not_match() {
        // Guards the test above against passing vacuously: a plain sum of micro-batch means
        // (what GradientsAccumulator gives unscaled) moves SGD weights four times as far.
        let config = train_config(OptimizerKind::Sgd, 0.0);
        let data = samples(64);
        let start = model(&Device::flex().autodiff());
        let initial = weights(&start);
        let (once, _) = one_update(&config, start, &data, &[64]);
        let step: Vec<f32> = initial.iter().zip(&once).map(|(a, b)| b - a).collect();
        let scaled: Vec<f32> = initial
            .iter()
            .zip(&step)
            .map(|(a, s)| a + 4.0 * s)
            .collect();
        assert!(max_abs_diff(&once, &scaled) > 1e-3);
    }
}
