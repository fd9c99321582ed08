//! Step time and peak memory of one optimizer step, large batch vs accumulation.
//!
//!     cargo bench                          # full: 30 timed steps per case
//!     TIDEMARK_BENCH_QUICK=1 cargo bench   # smoke run: 3 steps per case (CI uses this)
//!
//! Workloads (MLP 784-1024-1024-10, Adam, f32, synthetic data, flex backend):
//! - W1: batch 256;
//! - W2: accumulation 4 x 64 (the same update as W1).
//!
//! The device is synchronised inside the timed region (a loss read ends each step), and memory
//! comes from tidemark's own probe, as in a run's snapshots.

use std::time::Instant;

use burn::data::dataloader::batcher::Batcher;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::Device;
use tidemark::config::{
    Activation, LossScaling, MlpConfig, ModelConfig, OptimizerKind, Precision, SyntheticConfig,
    TrainConfig,
};
use tidemark::data::{generate, ClassificationBatcher};
use tidemark::memory::{format_bytes, CountingAllocator, MemoryProbe};
use tidemark::model::Model;
use tidemark::train::{accumulated_step, build_optimizer, MixedPrecision};

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator::new();

struct Case {
    name: &'static str,
    batch_size: usize,
    accumulation_steps: usize,
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument, if any, selects cases by name.
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let quick = std::env::var_os("TIDEMARK_BENCH_QUICK").is_some();
    let (warmup, timed) = if quick { (1, 3) } else { (5, 30) };
    let cases = [
        Case {
            name: "flex/W1 batch 256",
            batch_size: 256,
            accumulation_steps: 1,
        },
        Case {
            name: "flex/W2 accumulation 4x64",
            batch_size: 64,
            accumulation_steps: 4,
        },
    ];
    println!(
        "{:<28} {:>14} {:>14} {:>14}",
        "case", "median step", "peak in use", "in use after"
    );
    for case in cases
        .iter()
        .filter(|c| filter.as_ref().is_none_or(|f| c.name.contains(f.as_str())))
    {
        run(case, warmup, timed);
    }
}

fn run(case: &Case, warmup: usize, timed: usize) {
    let device = Device::flex().autodiff();
    device.seed(1);
    let data = generate(&SyntheticConfig {
        samples: 256,
        features: 784,
        classes: 10,
        seed: 3,
        noise: 1.0,
    });
    let group: Vec<_> = data
        .chunks(case.batch_size)
        .map(|chunk| ClassificationBatcher.batch(chunk.to_vec(), &device))
        .collect();
    let model_cfg = ModelConfig::Mlp(MlpConfig {
        hidden: vec![1024, 1024],
        activation: Activation::Relu,
        dropout: 0.0,
    });
    let train = TrainConfig {
        epochs: 1,
        batch_size: case.batch_size,
        accumulation_steps: case.accumulation_steps,
        optimizer: OptimizerKind::Adam,
        lr: 1e-3,
        weight_decay: 0.0,
        precision: Precision::F32,
        loss_scaling: LossScaling::Off,
        initial_loss_scale: 65536.0,
        loss_scale_growth_interval: 2000,
    };
    let mut precision = MixedPrecision::from_config(&train);
    let mut model = Model::new(&model_cfg, 784, 10, &device);
    let mut optimizer = build_optimizer(&train);
    let loss_fn = CrossEntropyLossConfig::new().init(&device);
    let mut probe = MemoryProbe::new(&device);
    let mut times = Vec::with_capacity(timed);
    for i in 0..warmup + timed {
        if i == warmup {
            probe.reset_peak();
        }
        let start = Instant::now();
        let out = accumulated_step(
            model,
            &mut optimizer,
            train.lr,
            &loss_fn,
            &group,
            &mut precision,
            &mut probe,
        )
        .expect("step");
        // Reading the loss waits for the step to finish on any backend.
        let _ = out.loss.into_data();
        if i >= warmup {
            times.push(start.elapsed());
        }
        model = out.model;
    }
    times.sort();
    let usage = probe.read().expect("device sync");
    println!(
        "{:<28} {:>11.2} ms {:>14} {:>14}",
        case.name,
        times[times.len() / 2].as_secs_f64() * 1e3,
        format_bytes(usage.peak_bytes_in_use),
        format_bytes(usage.bytes_in_use),
    );
}
