//! One update over micro-batches against the same update over one batch.

use burn::module::Module;
use burn::tensor::Device;

use super::*;
use crate::config::{LossScaling, OptimizerKind, Precision, SyntheticConfig};
use crate::data::{generate, Sample};
use crate::model::{parameters, Activation, Cnn, Mlp, MlpConfig, Network};
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
        loss_scaling: Some(LossScaling::Off),
        ..TrainConfig::default()
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

#[test]
fn cnn_accumulation_4x16_matches_the_batch_of_64() {
    // Without batch norm: each micro-batch normalised by its own statistics would make
    // the two updates differ by design, as in any framework.
    let cnn = crate::model::CnnConfig {
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
mod precision;
