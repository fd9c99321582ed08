//! The workload in plain Burn: its data loader and `GradientsAccumulator`, with none of
//! tidemark's memory layer (no probe, no policy checks, no snapshots, no checkpoints), timed the
//! same way. The optimizer is the one tidemark builds (for Adam, `FusedAdam`), so that the rows
//! compare the memory layer and not two optimizers; `examples/step_split.rs -- --burn-adam`
//! times Burn's own Adam.

use std::time::Instant;

use burn::data::dataloader::DataLoaderBuilder;
use burn::data::dataset::InMemDataset;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::{GradientsAccumulator, GradientsParams};
use burn::tensor::Device;
use tidemark::data::{self, ClassificationBatch, ClassificationBatcher};
use tidemark::memory::{
    device_pool_figures, peak_resident_set_bytes, reset_host_peak, reset_peak_resident_set,
    HostCounters,
};
use tidemark::model::{Mlp, MlpConfig};
use tidemark::train::{build_optimizer, MixedPrecision};

use super::case::{config, median};
use super::{CaseResult, CaseSpec};

/// In use and reserved now: the pools where the device has them, else the host heap and the
/// peak resident set.
fn figures(device: &Device) -> (u64, u64) {
    match device_pool_figures(device) {
        Some(pool) => (pool.in_use, pool.reserved),
        None => (
            HostCounters::read().in_use,
            peak_resident_set_bytes().unwrap_or(0),
        ),
    }
}

pub fn run(spec: &CaseSpec) -> CaseResult {
    // Two runs in the process, the second measured, as for the tidemark cases.
    drop(run_once(spec));
    run_once(spec)
}

pub fn run_once(spec: &CaseSpec) -> CaseResult {
    let out = tempfile::tempdir().expect("a temporary directory");
    let cfg = config(spec, out.path());
    let device = tidemark::backend::select(&cfg.device).expect("the backend is compiled in");
    let ad = device.clone().autodiff();
    ad.seed(cfg.run.seed);
    let (before, _) = figures(&device);
    let dataset = data::load(&cfg.data, cfg.run.seed).expect("the workload's data");
    let train = &cfg.train;
    let loader = DataLoaderBuilder::new(ClassificationBatcher)
        .batch_size(train.batch_size)
        .shuffle(cfg.run.seed)
        .num_workers(cfg.data.num_workers)
        .set_device(ad.clone())
        .build(InMemDataset::new(dataset.train));
    let mlp: MlpConfig = (cfg.model.settings()).expect("the benchmark workloads are MLPs");
    let mut model = Mlp::new(&mlp, dataset.features, dataset.classes, &ad);
    let mut optimizer = build_optimizer(train);
    let loss_fn = CrossEntropyLossConfig::new().init(&ad);
    // The compute cast for bf16 (W3); no loss scaling.
    let precision = MixedPrecision::new(train.precision, None);

    // A warm process, as tidemark's run is after its warm-up: the backend's thread pool and
    // matrix-product buffers exist before the first step (measured: without this, the bare
    // loop's median step is 5-10% slower).
    for n in [32, 512] {
        let x = burn::tensor::Tensor::<2>::ones([n, n], &ad).require_grad();
        let y = burn::tensor::activation::relu(x.clone().matmul(x)).sum();
        drop(y.backward());
    }
    device.sync().expect("device sync");
    reset_host_peak();
    reset_peak_resident_set();
    let (mut peak_in_use, mut peak_reserved, mut rest_in_use) = (0, 0, 0);
    let pooled = device_pool_figures(&device).is_some();
    let mut intervals = Vec::new();
    // The last epoch's time per step's worth of samples, timed as tidemark's `samples_per_sec`
    // is: from its first step's start to its last step's end.
    let mut epoch_ms = None;
    for _epoch in 0..train.epochs {
        let mut batches = loader.iter();
        let mut last: Option<Instant> = None;
        let (mut first, mut trained) = (None, 0);
        loop {
            let group: Vec<ClassificationBatch> = batches
                .by_ref()
                .take(train.accumulation_steps)
                .map(|b| b.expect("a batch"))
                .collect();
            if group.is_empty() {
                break;
            }
            first.get_or_insert_with(Instant::now);
            let samples: usize = group.iter().map(ClassificationBatch::len).sum();
            trained += samples;
            let mut accumulator = GradientsAccumulator::<Mlp>::new();
            for batch in &group {
                let cx = precision.compute();
                let inputs = cx.input(batch.inputs.clone());
                let logits = match cx.dtype() {
                    None => model.forward(inputs),
                    Some(_) => cx.output(precision.compute_model(&model).forward(inputs)),
                };
                let loss = loss_fn
                    .forward(logits, batch.targets.clone())
                    .mul_scalar(batch.len() as f64 / samples as f64);
                let grads = GradientsParams::from_grads(loss.backward(), &model);
                accumulator.accumulate(&model, grads);
            }
            drop(group);
            model = optimizer.step(train.lr, model, accumulator.grads());
            device.sync().expect("device sync");
            let now = Instant::now();
            if let Some(last) = last {
                intervals.push(now.duration_since(last).as_secs_f64() * 1e3);
            }
            last = Some(now);
            // Pools are read after each step (in the next step's interval), as tidemark's
            // probe reads them inside its step. On the host both figures are high-water
            // marks, read once after the epochs: reading the peak resident set here, a read of
            // /proc/self/status, took a third of W0's step.
            if pooled {
                let (in_use, reserved) = figures(&device);
                peak_reserved = peak_reserved.max(reserved);
                peak_in_use = peak_in_use.max(in_use);
                rest_in_use = in_use;
            }
        }
        if let (Some(first), Some(last)) = (first, last) {
            let per_sample = last.duration_since(first).as_secs_f64() * 1e3 / trained as f64;
            epoch_ms = Some(per_sample * (train.batch_size * train.accumulation_steps) as f64);
        }
    }
    if !pooled {
        let host = HostCounters::read();
        (peak_in_use, rest_in_use) = (host.peak, host.in_use);
        peak_reserved = peak_resident_set_bytes().unwrap_or(0);
    }
    drop((model, optimizer, loss_fn, loader));
    device.sync().expect("device sync");
    let (after, _) = figures(&device);
    CaseResult {
        intervals_ms: intervals.clone(),
        steps_timed: intervals.len(),
        median_step_ms: median(&mut intervals),
        epoch_step_ms: epoch_ms,
        peak_in_use,
        rest_in_use,
        peak_reserved,
        fragmentation: Some(
            1.0 - peak_in_use.min(peak_reserved) as f64 / peak_reserved.max(1) as f64,
        ),
        retained_in_use: Some(after as i64 - before as i64),
        note: "no probe, policy or snapshots; dropped, not cleaned up".into(),
        ..CaseResult::default()
    }
}
