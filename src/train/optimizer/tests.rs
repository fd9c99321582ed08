//! Each optimizer steps, and its state survives a checkpoint: three steps, the state saved and
//! loaded into a fresh optimizer, three more give the weights of six uninterrupted steps.

use burn::optim::ModuleOptimizer;
use burn::tensor::Device;

use super::*;
use crate::config::SyntheticConfig;
use crate::data::{generate, Sample};
use crate::memory::MemoryMeter;
use crate::model::MlpConfig;
use crate::model::{parameters, Mlp};
use crate::task::Classify;
use crate::train::{accumulated_step, MixedPrecision};

fn config(optimizer: &str, keys: &[(&str, toml::Value)]) -> TrainConfig {
    let mut text = format!("[train]\noptimizer = \"{optimizer}\"\nlr = 0.01\n");
    for (key, value) in keys {
        text.push_str(&format!("{key} = {value}\n"));
    }
    crate::config::parse(&text, "t.toml", &[]).unwrap().train
}

fn steps(optimizer: &mut ModuleOptimizer, mut model: Mlp, data: &[Sample], n: usize) -> Mlp {
    let device = Device::flex().autodiff();
    let task = Classify::<Mlp>::new(Vec::new(), Vec::new(), |_| unreachable!());
    let mut meter = MemoryMeter::new(&device);
    for i in 0..n {
        let batch = data[i * 32..(i + 1) * 32].to_vec();
        model = accumulated_step(
            &task,
            model,
            optimizer,
            0.01,
            vec![batch],
            &device,
            &mut MixedPrecision::f32(),
            &mut meter,
        )
        .unwrap()
        .model;
    }
    model
}

fn max_diff(a: &Mlp, b: &Mlp) -> f32 {
    let (a, b) = (parameters(a), parameters(b));
    a.iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn every_optimizer_state_round_trips_through_a_checkpoint() {
    let data = generate(&SyntheticConfig {
        samples: 192,
        features: 10,
        classes: 3,
        seed: 3,
        noise: 1.0,
    });
    let device = Device::flex().autodiff();
    let mlp = MlpConfig {
        hidden: vec![16],
        activation: crate::model::Activation::Relu,
        dropout: 0.0,
    };
    let start = Mlp::new(&mlp, 10, 3, &device);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("optimizer.bpk");
    let float = |v: f64| toml::Value::Float(v);
    let cases = [
        config(
            "adam",
            &[("betas", toml::Value::try_from([0.8, 0.99]).unwrap())],
        ),
        config(
            "adamw",
            &[("weight_decay", float(0.1)), ("eps", float(1e-7))],
        ),
        config(
            "sgd",
            &[
                ("momentum", float(0.9)),
                ("nesterov", toml::Value::Boolean(true)),
            ],
        ),
        config(
            "rmsprop",
            &[("momentum", float(0.5)), ("alpha", float(0.9))],
        ),
    ];
    let mut finals = Vec::new();
    for train in cases {
        let whole = steps(&mut build_optimizer(&train), start.clone(), &data, 6);
        let mut first = build_optimizer(&train);
        let half = steps(&mut first, start.clone(), &data[..96], 3);
        first.save(&path).unwrap();
        let mut loaded = build_optimizer(&train).load(&path).unwrap();
        let resumed = steps(&mut loaded, half, &data[96..], 3);
        let moved = max_diff(&start, &whole);
        assert!(moved > 1e-3, "{:?}: moved {moved}", train.optimizer);
        let diff = max_diff(&whole, &resumed);
        assert!(
            diff == 0.0,
            "{:?}: resumed differs by {diff}",
            train.optimizer
        );
        finals.push(parameters(&whole));
    }
    // Four different optimizers, four different results.
    for i in 0..finals.len() {
        for j in i + 1..finals.len() {
            assert_ne!(finals[i], finals[j], "optimizers {i} and {j} agree");
        }
    }
}
