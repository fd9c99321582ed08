//! tidemark's own CubeCL kernels, on wgpu: Adam's update (one kernel a parameter) takes the
//! steps and keeps the state Burn's Adam does; the cross-entropy (three kernels) is Burn's loss
//! and gradient; and a step launches at most 45 kernels in all.

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig};
use burn::optim::decay::WeightDecayConfig;
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Int, Tensor, TensorData};
use tidemark::config::{Backend, DeviceConfig};
use tidemark::model::parameters;
use tidemark::train::FusedAdam;

use super::wgpu::adapter_or_skip;
use super::*;

#[derive(Module, Debug)]
struct Net {
    a: Linear,
    b: Linear,
}

fn wgpu() -> Device {
    tidemark::backend::select(&DeviceConfig {
        backend: Backend::Wgpu,
        index: 0,
        execution: None,
    })
    .unwrap()
    .autodiff()
}

/// Updates of `model` at `steps`, on inputs fixed by the step.
fn train(
    mut model: Net,
    optimizer: &mut ModuleOptimizer,
    steps: std::ops::Range<usize>,
    device: &Device,
) -> Net {
    for step in steps {
        let x: Vec<f32> = (0..16 * 300)
            .map(|i| ((i * 7 + step * 13) % 23) as f32 / 11.0 - 1.0)
            .collect();
        let x = Tensor::<2>::from_data(TensorData::new(x, [16, 300]), device);
        let y = model
            .b
            .forward(burn::tensor::activation::relu(model.a.forward(x)));
        let loss = y.square().mean();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optimizer.step(1e-2, model, grads);
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
fn fused_adam_on_wgpu_takes_the_steps_burns_adam_takes_to_the_last_bit() {
    if !adapter_or_skip("fused_adam_on_wgpu_takes_the_steps_burns_adam_takes_to_the_last_bit") {
        return;
    }
    let device = wgpu();
    let start = Net {
        a: LinearConfig::new(300, 200).init(&device),
        b: LinearConfig::new(200, 3).init(&device),
    };
    for decay in [None, Some(0.01f32)] {
        let mut burn = AdamConfig::new()
            .with_weight_decay(decay.map(WeightDecayConfig::new))
            .init();
        let mut fused = ModuleOptimizer::from(FusedAdam::new(decay));
        let expected = train(start.clone(), &mut burn, 0..6, &device);
        let got = train(start.clone(), &mut fused, 0..6, &device);
        let moved = max_diff(&start, &expected);
        let diff = max_diff(&expected, &got);
        assert!(moved > 1e-2, "{decay:?}: the weights moved by only {moved}");
        // The same operations in the same order, so the same bits (on lavapipe; a compiler
        // that fuses a multiplication into an addition could move the last bit).
        assert_eq!(
            diff, 0.0,
            "{decay:?}: the kernel and Burn's Adam differ by {diff}"
        );
    }
    // Three steps of the kernel, its state saved and loaded into Burn's Adam, three more: the
    // weights of six steps of Burn's Adam.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("optimizer.bpk");
    let mut fused = ModuleOptimizer::from(FusedAdam::new(None));
    let model = train(start.clone(), &mut fused, 0..3, &device);
    fused.save(&path).unwrap();
    let mut burn = AdamConfig::new().init().load(&path).unwrap();
    let got = train(model, &mut burn, 3..6, &device);
    let expected = train(start.clone(), &mut AdamConfig::new().init(), 0..6, &device);
    let diff = max_diff(&expected, &got);
    assert_eq!(diff, 0.0, "resumed in Burn's Adam: differs by {diff}");
}

#[test]
fn cross_entropy_on_wgpu_is_burns_loss_and_gradient_to_the_last_bit() {
    if !adapter_or_skip("cross_entropy_on_wgpu_is_burns_loss_and_gradient_to_the_last_bit") {
        return;
    }
    let device = wgpu();
    // Three shapes (rows read 2, 1 and 4 at a time), with the target's logit ordinary and
    // boosted (a confident prediction: a loss near 0, where one bit of the row's sum is a
    // relative 1e-5 of the loss).
    let cases = [
        (64, 10, 0.0),
        (37, 3, 0.0),
        (16, 300, 0.0),
        (39, 10, 12.0),
        (16, 300, 12.0),
    ];
    for (rows, classes, boost) in cases {
        let target = |r: usize| (r * 7) % classes;
        let x: Vec<f32> = (0..rows * classes)
            .map(|i| {
                let hit = i % classes == target(i / classes);
                ((i * 37 + 11) % 101) as f32 / 9.0 - 5.0 + if hit { boost } else { 0.0 }
            })
            .collect();
        let targets: Vec<i64> = (0..rows).map(|r| target(r) as i64).collect();
        let targets = Tensor::<1, Int>::from_data(TensorData::new(targets, [rows]), &device);
        let loss_and_grad = |ours: bool| {
            let x = Tensor::<2>::from_data(TensorData::new(x.clone(), [rows, classes]), &device)
                .require_grad();
            let loss = match ours {
                true => tidemark::task::cross_entropy(x.clone(), targets.clone()),
                false => CrossEntropyLossConfig::new()
                    .init(&device)
                    .forward(x.clone(), targets.clone()),
            };
            let grads = loss.backward();
            let grad = x
                .grad(&grads)
                .unwrap()
                .into_data()
                .try_into_vec::<f32>()
                .unwrap();
            (loss.into_data().try_into_vec::<f32>().unwrap()[0], grad)
        };
        let ((loss, grad), (burn_loss, burn_grad)) = (loss_and_grad(true), loss_and_grad(false));
        let case = format!("{rows} x {classes}, boost {boost}");
        assert!(loss > 1e-3, "{case}: a loss of {loss}");
        assert_eq!(
            loss.to_bits(),
            burn_loss.to_bits(),
            "{case}: {loss} against Burn's {burn_loss}"
        );
        let differ = grad.iter().zip(&burn_grad).filter(|(a, b)| a != b).count();
        assert_eq!(
            differ, 0,
            "{case}: {differ} gradient elements differ from Burn's"
        );
        let total: f32 = grad.iter().map(|g| g.abs()).sum();
        assert!(total > 1e-3, "{case}: a gradient of total {total}");
    }
}

/// Kernels CubeCL's profiling log lists for a run of `steps` steps of the wgpu tests' pool
/// config, by kernel name (its first field).
fn kernels(env: &Env, steps: usize) -> std::collections::BTreeMap<String, usize> {
    let log = env.path(&format!("kernels-{steps}.log"));
    env.write(
        "cubecl.toml",
        &format!(
            "[profiling.logger]\nlevel = \"minimal\"\nfile = \"{}\"\nappend = false\n",
            log.display()
        ),
    );
    // 128 a batch; validation takes 1% of the samples, a batch in either run.
    let samples = ((steps * 128 - 64) * 100 / 99).to_string();
    let name = format!("run.name=steps-{steps}");
    let set_samples = format!("data.samples={samples}");
    let run = env.run(&[
        "train",
        "--config",
        "pool.toml",
        "--quiet",
        "--set",
        &name,
        "--set",
        &set_samples,
        "--set",
        "data.validation_fraction=0.01",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert_eq!(
        env.summary(&format!("runs/steps-{steps}"))["steps"],
        steps,
        "the run's steps"
    );
    let mut counts = std::collections::BTreeMap::new();
    for line in std::fs::read_to_string(&log).unwrap().lines() {
        let name = line.trim_start_matches("Executing ");
        let kind = name.split([' ', '_']).next().unwrap_or_default();
        *counts.entry(kind.to_string()).or_default() += 1;
    }
    counts
}

#[test]
fn a_step_on_wgpu_launches_at_most_45_kernels() {
    if !adapter_or_skip("a_step_on_wgpu_launches_at_most_45_kernels") {
        return;
    }
    let env = Env::new();
    env.write("pool.toml", super::wgpu::POOL);
    // What two runs share (building the model, validation's one batch, the end) cancels in
    // their difference.
    let (short, long) = (kernels(&env, 6), kernels(&env, 16));
    let count = |runs: &std::collections::BTreeMap<String, usize>, kind: &str| {
        runs.get(kind).copied().unwrap_or(0) as f64
    };
    let per_step = |kind: &str| (count(&long, kind) - count(&short, kind)) / 10.0;
    let total = |runs: &std::collections::BTreeMap<String, usize>| runs.values().sum::<usize>();
    let all = (total(&long) as f64 - total(&short) as f64) / 10.0;
    // Three layers: a weight and a bias each, an Adam kernel each.
    assert_eq!(per_step("AdamKernel"), 6.0, "{long:?}");
    assert_eq!(
        per_step("RowsKernel") + per_step("GradKernel"),
        2.0,
        "{long:?}"
    );
    assert!(all <= 45.0, "{all} kernels a step: {long:?}");
}
