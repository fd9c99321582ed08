//! The input pipeline: is the data loader ever what a training step waits for?
//!
//! For each workload and each `num_workers` (0: items fetched on the training thread when the
//! loop asks; 2: Burn's worker threads, which queue up to 100 lists of items ahead), one process
//! measures:
//!
//! - **the loader alone**: the training loader exactly as tidemark builds it
//!   (`tidemark::data::item_loader`: shuffled lists of items, each made into tensors on the
//!   device by the batcher, as the training loop does),
//!   iterated over whole epochs with nothing else running, after one warm-up epoch; the time per
//!   batch, with the device synchronised at each epoch's end;
//! - **training**: tidemark's `Trainer` on the same config (growth policy), twice, the second
//!   run measured as in the policy cases: the median synchronised optimizer step, and the run's
//!   peak in use.
//!
//! With 0 workers every batch is built inside the step, so `loader / step` is the share of a
//! step spent on input. With workers it overlaps the step instead, and the training column
//! shows whether that overlap pays on this machine.

use std::time::Instant;

use burn::data::dataloader::batcher::Batcher;

use tidemark::config::{Backend, ClearPolicy};
use tidemark::data;
use tidemark::memory::format_bytes;

use super::case::{measured_run, median, workload_config};
use super::run_in_child;

/// Environment variable naming the pipeline case a child process runs.
pub const PIPELINE_VAR: &str = "TIDEMARK_BENCH_PIPELINE";

/// The workloads: the standard W1 and the two shipped digits configs (the smallest steps, so
/// the largest share of input).
pub const WORKLOADS: [(&str, &str); 3] = [
    ("W1", "configs/bench/w1.toml"),
    ("digits-mlp", "configs/digits-mlp.toml"),
    ("digits-cnn", "configs/digits-cnn.toml"),
];

/// The `num_workers` settings compared.
pub const WORKERS: [usize; 2] = [0, 2];

/// Epochs the loader alone is timed over (after one warm-up epoch).
const LOADER_EPOCHS: usize = 5;

/// What one pipeline case measured.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct PipelineResult {
    pub batches_per_epoch: usize,
    pub loader_us_per_batch: Option<f64>,
    pub median_step_ms: Option<f64>,
    pub peak_in_use: u64,
    pub note: String,
}

/// The child side of one case: `config:backend:workers:quick`.
pub fn run_child(case: &str) -> PipelineResult {
    let parts: Vec<&str> = case.split(':').collect();
    let [config_path, backend, workers, quick] = parts[..] else {
        panic!("{PIPELINE_VAR} = {case:?} is not config:backend:workers:quick");
    };
    let backend = Backend::ALL
        .into_iter()
        .find(|b| b.name() == backend)
        .expect("a known backend");
    let workers: usize = workers.parse().expect("a worker count");
    let quick = quick == "1";
    let out = tempfile::tempdir().expect("a temporary directory");
    let cfg = super::case::variant(
        &workload_config(config_path, backend, quick, out.path()),
        |b| b.num_workers(workers).clear(ClearPolicy::Never),
    );

    // The loader alone, built as `Trainer` builds it, on the autodiff device.
    let device = tidemark::backend::select(&cfg.device).expect("the backend is compiled in");
    let ad = device.clone().autodiff();
    let dataset = data::load(&cfg.data, cfg.run.seed).expect("the workload's data");
    let loader = data::item_loader(
        std::sync::Arc::new(burn::data::dataset::InMemDataset::new(dataset.train)),
        cfg.train.batch_size,
        Some(cfg.run.seed),
        workers,
    );
    let mut per_batch_us = Vec::new();
    let mut batches_per_epoch = 0;
    for epoch in 0..=LOADER_EPOCHS {
        let start = Instant::now();
        let mut batches = 0;
        for items in loader.iter() {
            let items = items.expect("a batch");
            std::hint::black_box(data::ClassificationBatcher.batch(items, &ad));
            batches += 1;
        }
        device.sync().expect("device sync");
        if epoch > 0 {
            per_batch_us.push(start.elapsed().as_secs_f64() * 1e6 / batches.max(1) as f64);
        }
        batches_per_epoch = batches;
    }
    drop(loader);

    // Training: a warm-up run, then the measured one.
    let first = super::case::variant(&cfg, |b| b.name(format!("{}-first", cfg.run.name)));
    if let Err(e) = tidemark::train::Trainer::new(first).run() {
        return PipelineResult {
            note: e.to_string(),
            ..PipelineResult::default()
        };
    }
    let trained = measured_run(cfg);
    PipelineResult {
        batches_per_epoch,
        loader_us_per_batch: median(&mut per_batch_us),
        median_step_ms: trained.median_step_ms,
        peak_in_use: trained.peak_in_use,
        note: trained.note,
    }
}

/// Prints the table for `backend`, running each case in `repeats` processes (the one with the
/// median step is shown).
pub fn run(backend: Backend, quick: bool, repeats: usize) {
    println!(
        "\nInput pipeline on {backend}: the training loader alone (per batch, median of \
         {LOADER_EPOCHS} epochs) against a whole training step (median), by num_workers"
    );
    println!(
        "| workload | num_workers | batches per epoch | loader alone, per batch | training step \
         | loader / step | peak in use in training | note |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (workload, config) in WORKLOADS {
        for workers in WORKERS {
            let case = format!("{config}:{backend}:{workers}:{}", u8::from(quick));
            let mut results: Vec<PipelineResult> = (0..repeats).map(|_| spawn(&case)).collect();
            results.sort_by(|a, b| {
                let key = |r: &PipelineResult| r.median_step_ms.unwrap_or(f64::MAX);
                key(a).total_cmp(&key(b))
            });
            let r = results.swap_remove(results.len() / 2);
            let share = match (r.loader_us_per_batch, r.median_step_ms) {
                (Some(us), Some(ms)) => format!("{:.1}%", us / (ms * 1e3) * 100.0),
                _ => "-".into(),
            };
            println!(
                "| {workload} | {workers} | {} | {} | {} | {share} | {} | {} |",
                r.batches_per_epoch,
                r.loader_us_per_batch
                    .map_or("-".into(), |us| format!("{us:.1} µs")),
                r.median_step_ms
                    .map_or("-".into(), |ms| format!("{ms:.2} ms")),
                if r.median_step_ms.is_some() {
                    format_bytes(r.peak_in_use)
                } else {
                    "-".into()
                },
                r.note.replace('|', "/"),
            );
        }
    }
}

fn spawn(case: &str) -> PipelineResult {
    run_in_child(&[(PIPELINE_VAR, case.to_string())]).unwrap_or_else(|note| PipelineResult {
        note,
        ..PipelineResult::default()
    })
}
