//! One update over micro-batches against the same update over one batch.

use burn::module::Module;
use burn::tensor::Device;

use super::*;
use crate::config::{
    Activation, LossScaling, MlpConfig, OptimizerKind, Precision, SyntheticConfig,
};
use crate::data::{generate, Sample};
use crate::model::{parameters, Cnn, Mlp, Network};
use crate::task::Classify;
use crate::train::build_optimizer;
use crate::train::LossScaler;

fn weights<M: Module>(model: &M) -> Vec<f32> {
    parameters(model)
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
fn cut(data: &[Sample], sizes: &[usize]) -> Vec<Vec<Sample>> {
    let mut offset = 0;
    sizes
        .iter()
        .map(|&n| {
            offset += n;
            data[offset - n..offset].to_vec()
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
    let mut meter = MemoryMeter::new(&device);
    let out = accumulated_step(
        &task::<N>(),
        model,
        &mut optimizer,
        config.lr,
        cut(data, sizes),
        &device,
        precision,
        &mut meter,
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
        OptimizerKind::Sgd => 0.5,
        _ => 1e-2,
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
        betas: None,
        eps: None,
        momentum: None,
        nesterov: None,
        alpha: None,
        clip_grad_norm: None,
        clip_grad_value: None,
        schedule: None,
        early_stopping: None,
        offload: Default::default(),
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

/// Weights after one clipped step over `data` in micro-batches of `sizes`, and whether the
/// step was clipped.
fn clipped_update(
    config: &TrainConfig,
    clip: Clip,
    model: Mlp,
    data: &[Sample],
    sizes: &[usize],
) -> (Vec<f32>, f32) {
    let device = Device::flex().autodiff();
    let mut precision = MixedPrecision::f32();
    let Ok(acc) = accumulate_gradients(
        &task::<Mlp>(),
        &model,
        cut(data, sizes),
        &device,
        &precision,
        super::SumPlace::default(),
        || Ok::<(), std::convert::Infallible>(()),
    );
    let mut optimizer = build_optimizer(config);
    let applied = apply_gradients(
        model,
        acc.grads,
        &mut optimizer,
        &mut precision,
        Some(clip),
        config.lr,
    )
    .unwrap();
    let flag = applied
        .clipped
        .expect("a clipped step reports")
        .into_scalar::<f32>();
    (weights(&applied.model), flag)
}

#[test]
fn clipping_the_accumulated_gradient_equals_clipping_the_large_batch() {
    let data = samples(256);
    let start = model(&Device::flex().autodiff());
    let initial = weights(&start);
    // Bounds well inside this gradient's norm and largest element, so both clip.
    for optimizer in [OptimizerKind::Sgd, OptimizerKind::Adamw] {
        let config = train_config(optimizer, 1e-2);
        for clip in [Clip::Norm(0.05), Clip::Value(1e-3)] {
            let (large, large_flag) = clipped_update(&config, clip, start.clone(), &data, &[256]);
            let (acc, acc_flag) =
                clipped_update(&config, clip, start.clone(), &data, &[64, 64, 64, 64]);
            assert_eq!((large_flag, acc_flag), (1.0, 1.0), "{clip:?} clips");
            let diff = max_abs_diff(&large, &acc);
            assert!(diff < 1e-5, "{optimizer:?} {clip:?}: differs by {diff}");
            assert!(
                max_abs_diff(&initial, &large) > 1e-4,
                "{clip:?}: the step moved"
            );
        }
    }
    // Clipping each micro-batch instead would give another update: the bound is applied to
    // the sum, not to its parts.
    let config = train_config(OptimizerKind::Sgd, 0.0);
    let (large, _) = clipped_update(&config, Clip::Norm(0.05), start.clone(), &data, &[256]);
    let (unclipped, _) = one_update(&config, start, &data, &[256]);
    assert!(max_abs_diff(&large, &unclipped) > 1e-3);
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
        let (large, large_loss) = one_update_in(&mut f16(), &config, start.clone(), &data, &[256]);
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
    let group: Vec<Vec<Sample>> = data.chunks(64).map(<[Sample]>::to_vec).collect();
    let mut precision =
        MixedPrecision::new(Precision::F16, Some(LossScaler::new(2f64.powi(40), 2000)));
    let mut optimizer = build_optimizer(&config);
    let mut meter = MemoryMeter::new(&device);
    let mut model = model(&device);
    let (mut skipped, mut applied, mut losses) = (0, 0, Vec::new());
    for _ in 0..40 {
        let before = weights(&model);
        let out = accumulated_step(
            &task::<Mlp>(),
            model,
            &mut optimizer,
            config.lr,
            group.clone(),
            &device,
            &mut precision,
            &mut meter,
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

mod offload;
