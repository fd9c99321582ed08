//! `FusedAdam` against Burn's Adam: the same steps, and records that load in either.

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor, TensorData};

use super::*;
use crate::model::parameters;

/// Two layers: 300 x 200 (60,000 weights, split into two parallel chunks) and 200 x 3 (one
/// chunk, the serial path), with biases.
#[derive(Module, Debug)]
struct Net {
    a: Linear,
    b: Linear,
}

fn net(device: &Device) -> Net {
    Net {
        a: LinearConfig::new(300, 200).init(device),
        b: LinearConfig::new(200, 3).init(device),
    }
}

/// Updates of `model` at `steps`, on inputs fixed by the step.
fn train(
    mut model: Net,
    optimizer: &mut ModuleOptimizer,
    steps: std::ops::Range<usize>,
    lr: f64,
) -> Net {
    let device = Device::flex().autodiff();
    for step in steps {
        // Fixed inputs (flex's generator is shared by the tests running in parallel).
        let x: Vec<f32> = (0..16 * 300)
            .map(|i| ((i * 7 + step * 13) % 23) as f32 / 11.0 - 1.0)
            .collect();
        let x = Tensor::<2>::from_data(TensorData::new(x, [16, 300]), &device);
        let y = model
            .b
            .forward(burn::tensor::activation::relu(model.a.forward(x)));
        let loss = y.square().mean();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optimizer.step(lr, model, grads);
    }
    model
}

fn max_diff(a: &Net, b: &Net) -> f32 {
    let (a, b) = (parameters(a), parameters(b));
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn fused_adam_takes_the_steps_burns_adam_takes() {
    let device = Device::flex().autodiff();
    let start = net(&device);
    for decay in [None, Some(0.01f32)] {
        let mut burn = AdamConfig::new()
            .with_weight_decay(decay.map(WeightDecayConfig::new))
            .init();
        let mut fused = ModuleOptimizer::from(FusedAdam::new(decay));
        let expected = train(start.clone(), &mut burn, 0..6, 1e-2);
        let got = train(start.clone(), &mut fused, 0..6, 1e-2);
        let moved = max_diff(&start, &expected);
        let diff = max_diff(&expected, &got);
        assert!(moved > 1e-2, "{decay:?}: the weights moved by only {moved}");
        assert!(
            diff <= 1e-6,
            "{decay:?}: fused and Burn's Adam differ by {diff}"
        );
    }
}

#[test]
fn fused_adam_takes_burns_steps_with_other_betas_and_epsilon() {
    let device = Device::flex().autodiff();
    let start = net(&device);
    let mut burn = AdamConfig::new()
        .with_beta_1(0.8)
        .with_beta_2(0.95)
        .with_epsilon(1e-7)
        .init();
    let mut fused = ModuleOptimizer::from(FusedAdam::with(0.8, 0.95, 1e-7, None));
    let expected = train(start.clone(), &mut burn, 0..6, 1e-2);
    let got = train(start.clone(), &mut fused, 0..6, 1e-2);
    let defaults = train(start.clone(), &mut AdamConfig::new().init(), 0..6, 1e-2);
    assert!(
        max_diff(&expected, &defaults) > 1e-4,
        "the constants change the steps"
    );
    let diff = max_diff(&expected, &got);
    assert!(diff <= 1e-6, "fused and Burn's Adam differ by {diff}");
}

#[test]
fn fused_adam_state_is_burns_adam_state() {
    // Three fused steps, the state saved and loaded into Burn's Adam, three more steps:
    // the same weights as six steps of Burn's Adam.
    let device = Device::flex().autodiff();
    let start = net(&device);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("optimizer.bpk");
    let mut fused = ModuleOptimizer::from(FusedAdam::new(None));
    let model = train(start.clone(), &mut fused, 0..3, 1e-2);
    fused.save(&path).unwrap();
    let mut burn = AdamConfig::new().init().load(&path).unwrap();
    let got = train(model, &mut burn, 3..6, 1e-2);
    let expected = train(start.clone(), &mut AdamConfig::new().init(), 0..6, 1e-2);
    let diff = max_diff(&expected, &got);
    assert!(diff <= 1e-6, "resumed in Burn's Adam: differs by {diff}");
}
