//! One policy case: the workload through tidemark's `Trainer`, every step timed from inside.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::time::Instant;

use burn::tensor::Device;
use tidemark::config::{
    load, Backend, ClearPolicy, ConfigBuilder, DataSource, MemorySize, Offload, OnLimit, RunConfig,
};
use tidemark::memory::MemorySource;
use tidemark::record::Observer;
use tidemark::record::{read_snapshots, Event};
use tidemark::train::Trainer;
use tidemark::Error;

use super::{CaseResult, CaseSpec, Policy};

/// Syncs the device after each optimizer step and keeps the intervals between steps of the
/// same epoch.
struct StepTimer {
    device: Device,
    last: Option<Instant>,
    intervals_ms: Rc<RefCell<Vec<f64>>>,
}

impl Observer for StepTimer {
    fn step_done(&mut self, _epoch: usize, step: usize) {
        self.device.sync().expect("device sync");
        let now = Instant::now();
        if let (true, Some(last)) = (step > 1, self.last) {
            self.intervals_ms
                .borrow_mut()
                .push(now.duration_since(last).as_secs_f64() * 1e3);
        }
        self.last = Some(now);
    }
}

/// The workload's config for `spec`, with its output in `out`.
pub fn config(spec: &CaseSpec, out: &Path) -> RunConfig {
    workload_config(&spec.config, spec.backend, spec.quick, out)
}

/// The config file `path` (relative to the crate) on `backend`, with its output in `out`; in a
/// quick run, one epoch of at most 1024 synthetic samples, or enough for four optimizer steps
/// (the first step of an epoch is not timed, so W4's batch of 4096 needs more than 1024).
pub fn workload_config(path: &str, backend: Backend, quick: bool, out: &Path) -> RunConfig {
    let overrides = [
        format!("device.backend={backend}"),
        format!("run.output_dir=\"{}\"", out.display()),
    ]
    .map(|o| tidemark::config::Override::parse(&o).expect("a valid override"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cfg = load(&root.join(path), &overrides).expect("the workload config loads");
    if !quick {
        return cfg;
    }
    variant(&cfg, |b| {
        let b = match &cfg.data.source {
            DataSource::Synthetic(s) => {
                let batch = cfg.train.batch_size * cfg.train.accumulation_steps;
                // Four steps' samples are 80% of the data after the validation split.
                let enough = 1024_usize.max(5 * batch);
                b.synthetic(s.samples.min(enough), s.features, s.classes)
            }
            _ => b,
        };
        b.epochs(1)
    })
}

/// A variant of `cfg`, built and validated again as a file would be.
pub fn variant(cfg: &RunConfig, edit: impl FnOnce(ConfigBuilder) -> ConfigBuilder) -> RunConfig {
    edit(ConfigBuilder::from_config(cfg))
        .build()
        .expect("the benchmark's variant validates")
}

/// The growth case's peak of the figure a limit is checked against: in use on the host,
/// reserved in CubeCL pools (`tidemark::memory::policy::held`).
fn held_peak(spec: &CaseSpec, g: &super::GrowthFigures) -> u64 {
    match spec.backend {
        tidemark::config::Backend::Flex => g.peak_in_use,
        _ => g.peak_reserved.max(g.peak_in_use),
    }
}

/// A limit the workload's step breaks and a step of half its micro-batch fits: halfway between
/// the growth run's peak and the peak its breakdown predicts for half the micro-batch (half
/// the activations, and a second gradient set where accumulation starts), and whether the
/// case needs `"auto"` offload to meet it.
///
/// Where halving cannot help (a parameter-heavy step), a device with memory of its own sizes
/// the limit just under the pages the growth run's training took (a quarter of the optimizer's
/// state under them), and the case runs with `train.offload.* = "auto"`; on flex, where there
/// is nothing to offload to, an error says why halving cannot help.
fn shrink_limit(
    spec: &CaseSpec,
    g: &super::GrowthFigures,
    cfg: &tidemark::config::RunConfig,
) -> Result<(u64, bool), String> {
    let peak = held_peak(spec, g);
    let Some(b) = &g.breakdown else {
        let rest = g.rest_in_use.min(peak);
        return Ok((rest + (peak - rest) / 2, false));
    };
    let second_set = match cfg.train.accumulation_steps {
        1 => b.gradients,
        _ => 0,
    };
    let halved = (peak + second_set).saturating_sub(b.activations / 2);
    if halved < peak {
        return Ok((halved + (peak - halved) / 2, false));
    }
    let bytes = tidemark::memory::format_bytes;
    if spec.backend == Backend::Flex || b.optimizer == 0 {
        return Err(format!(
            "not sized: half the micro-batch saves at most {} of activations and adds a {} \
             gradient set, and flex has no device memory to offload from",
            bytes(b.activations / 2),
            bytes(second_set)
        ));
    }
    // Just under the pages training took (not the advisor's probes after it): a limit the
    // step breaks, which the optimizer's state moved to host memory (about two 8 MiB pages on
    // W1) makes room under. Halfway down that saving would leave less than a page for the
    // staging memory the reads back take.
    let pages = match g.train_reserved {
        0 => peak,
        pages => pages.max(g.peak_in_use),
    };
    Ok((pages - b.optimizer / 4, true))
}

/// The median of `values` (sorted in place).
pub fn median(values: &mut [f64]) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied()
}

pub fn run(spec: &CaseSpec) -> CaseResult {
    let out = tempfile::tempdir().expect("a temporary directory");
    let cfg = config(spec, out.path());
    let base = ConfigBuilder::from_config(&cfg).clear(ClearPolicy::Never);
    let needs_growth = || CaseResult {
        note: "needs the growth case's figures".into(),
        ..CaseResult::default()
    };
    let builder = match (spec.policy, &spec.growth) {
        (Policy::Bare | Policy::Growth, _) => base,
        (Policy::Clear, _) => base.clear(ClearPolicy::BetweenRuns),
        (Policy::Preallocate | Policy::Limit | Policy::LimitShrink | Policy::LimitFit, None) => {
            return needs_growth()
        }
        (Policy::Preallocate, Some(g)) => {
            base.preallocate(MemorySize::Bytes(g.peak_reserved * 5 / 4))
        }
        (Policy::Limit, Some(g)) => {
            base.memory_limit(MemorySize::Bytes(held_peak(spec, g) * 5 / 4), OnLimit::Fail)
        }
        (Policy::LimitShrink | Policy::LimitFit, Some(g)) => match shrink_limit(spec, g, &cfg) {
            Ok((limit, offload)) => {
                let on_limit = match spec.policy {
                    Policy::LimitFit => OnLimit::Fit,
                    _ => OnLimit::Shrink,
                };
                let base = base.memory_limit(MemorySize::Bytes(limit), on_limit);
                match offload {
                    true => base
                        .offload_gradients(Offload::Auto)
                        .offload_optimizer(Offload::Auto),
                    false => base,
                }
            }
            Err(note) => {
                return CaseResult {
                    note,
                    ..CaseResult::default()
                }
            }
        },
    };
    let cfg = builder.build().expect("the case's config validates");
    // The process's first run pays for one-time state (thread pools, the allocator's
    // thresholds, first-touch page faults) and runs 5-25% slower; the measured run is the
    // second, as in a sweep or any long-lived program. Only `clear` releases in between.
    let first = variant(&cfg, |b| b.name(format!("{}-first", cfg.run.name)));
    if let Err(e) = Trainer::new(first).run() {
        return failed(e);
    }
    give_back_free_pages(&cfg);
    measured_run(cfg)
}

/// On CubeCL pools, gives the pages the first run left free back to the device, so that the
/// measured run's pages are its own: a limit counts reserved pages, and a warm-up's would count
/// against it before the run's first step. (The host's free pages stay: they are the one-time
/// state the first run pays for.)
fn give_back_free_pages(cfg: &RunConfig) {
    if cfg.device.backend == Backend::Flex {
        return;
    }
    let device = tidemark::backend::select(&cfg.device).expect("the backend is compiled in");
    device.sync().expect("the device finishes the first run");
    device.memory_cleanup();
}

/// The growth policy, `runs` times in this process (each run in its own directory).
pub fn growth_config(spec: &CaseSpec, out: &Path) -> RunConfig {
    variant(&config(spec, out), |b| b.clear(ClearPolicy::Never))
}

/// One run of `cfg`, every step timed, with the memory figures of its summary.
pub fn measured_run(cfg: RunConfig) -> CaseResult {
    let micro_batch = cfg.train.batch_size;
    let step_samples = (cfg.train.batch_size * cfg.train.accumulation_steps) as f64;
    let device = tidemark::backend::select(&cfg.device).expect("the backend is compiled in");
    let intervals = Rc::new(RefCell::new(Vec::new()));
    let timer = StepTimer {
        device,
        last: None,
        intervals_ms: intervals.clone(),
    };
    let started = Instant::now();
    let outcome = Trainer::new(cfg).observer(timer).run();
    let mut intervals = intervals.take();
    let intervals_ms = intervals.clone();
    let summary = match outcome {
        Ok(summary) => summary,
        Err(e) => return failed(e),
    };
    let snapshots = read_snapshots(&summary.run_dir.join("snapshots.jsonl")).unwrap_or_default();
    let rest_in_use = snapshots
        .iter()
        .rfind(|s| s.event == Event::Epoch)
        .map_or(0, |s| s.memory.bytes_in_use);
    let train_reserved = (snapshots.iter())
        .filter(|s| s.event == Event::Epoch)
        .map(|s| s.memory.bytes_reserved)
        .max()
        .unwrap_or(0);
    // On the host, reserved is the resident set; its true peak is in the run-end figures.
    let peak_reserved = match summary.memory_source {
        MemorySource::Host => summary
            .peak_bytes_reserved
            .max(summary.retained.map_or(0, |r| r.rss_peak_bytes)),
        MemorySource::CubeclPool => summary.peak_bytes_reserved,
    };
    let mut note = Vec::new();
    if summary.micro_batch != micro_batch {
        note.push(format!(
            "shrank to {} x {}",
            summary.micro_batch, summary.accumulation_steps
        ));
    }
    if let Some(limit) = summary.limit_bytes {
        note.push(format!("limit {}", tidemark::memory::format_bytes(limit)));
    }
    let offloaded: Vec<&str> = snapshots
        .iter()
        .filter(|s| s.action == Some(tidemark::memory::Action::Offload))
        .filter_map(|s| s.detail.as_deref()?.split(" = ").next())
        .collect();
    if !offloaded.is_empty() {
        // The step time above includes the transfers.
        note.push(format!(
            "auto offload: {} (transfers in the step time)",
            offloaded.join(", ")
        ));
    }
    note.push(format!("run {:.1} s", started.elapsed().as_secs_f64()));
    let median_step_ms = median(&mut intervals);
    // The last epoch's pace (its steps' `samples_per_sec`) as time per step's worth of
    // samples: the median step plus the epoch's slow and short steps and what runs between them.
    let epoch_ms = snapshots
        .iter()
        .rfind(|s| s.event == Event::Epoch)
        .and_then(|s| s.samples_per_sec)
        .map(|per_sec| step_samples * 1e3 / per_sec);
    CaseResult {
        steps_timed: intervals.len(),
        median_step_ms,
        epoch_step_ms: epoch_ms,
        peak_in_use: summary.peak_bytes_in_use,
        rest_in_use,
        peak_reserved,
        train_reserved,
        fragmentation: Some(
            1.0 - summary.peak_bytes_in_use.min(peak_reserved) as f64 / peak_reserved.max(1) as f64,
        ),
        retained_in_use: summary.retained.map(|r| r.retained_bytes_in_use),
        retained_reserved: summary.retained.map(|r| r.retained_bytes_reserved),
        note: note.join("; "),
        breakdown: summary.breakdown.clone(),
        overhead: None,
        intervals_ms,
    }
}

fn failed(e: Error) -> CaseResult {
    CaseResult {
        note: e.to_string(),
        ..CaseResult::default()
    }
}
