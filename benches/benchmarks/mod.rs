//! The policy benchmark.
//!
//! **What a case measures.** A case trains one workload under one policy with tidemark's real
//! training loop (`Trainer`), twice in one process, and measures the second run (the first
//! pays for one-time state and runs 5-25% slower; on CubeCL pools the pages it left free go back
//! to the device first, so that each row's pages are its own run's). It times every optimizer
//! step from inside
//! the run: an observer's
//! `step_done` hook synchronises the device and reads the clock, so each interval holds one
//! step's loading, forward, backward, update, memory checks and the device's work. The first
//! step of each epoch is left out (it also holds the previous epoch's validation and
//! checkpoint); the table gives the median of the rest. Memory comes from the run's summary,
//! as `tidemark compare` reports it: peak in use, peak reserved (on the host the peak resident
//! set), fragmentation = 1 − peak in use / peak reserved, and what the run kept after its end
//! against before it.
//!
//! **The bare-Burn row** runs the same workload in a loop written against Burn alone: Burn's
//! data loader, `GradientsAccumulator` and optimizer, no probe, no policy, no snapshots, and
//! the same synchronised timing. The gap between it and the `growth` row is the cost of
//! tidemark's layer.
//!
//! **One process per case.** The allocator's free pages, the resident set, and CubeCL's
//! process-wide settings outlive a run, so each case runs in a fresh process (this binary,
//! started again with `TIDEMARK_BENCH_CASE` set) and reports one JSON line. A full run gives
//! each case five processes, in rounds (every case once a round, in the table's order), so that
//! the machine's busier minutes fall on every row alike; a row is its median process. Cases
//! that size a limit or a reservation from the `growth` case get the first round's growth
//! figures through the environment.
//!
//! **Why not criterion or divan.** Both time a closure called repeatedly in one process. This
//! benchmark needs the timing from inside a whole training loop, memory columns beside it, and
//! a process per case; neither harness gives those, so the harness is this file.

mod bare;
mod case;
mod pipeline;

use std::path::Path;
use std::process::Command;

use case::median;
use serde::{Deserialize, Serialize};
use tidemark::backend::compiled_backends;
use tidemark::config::Backend;
use tidemark::memory::{format_bytes, format_signed_bytes, Breakdown};

/// Environment variable naming the case a child process runs.
const CASE_VAR: &str = "TIDEMARK_BENCH_CASE";
/// Growth figures handed to the cases that size themselves from them.
const GROWTH_VAR: &str = "TIDEMARK_BENCH_GROWTH";
/// A directory where each case's child writes its step intervals.
const INTERVALS_VAR: &str = "TIDEMARK_BENCH_INTERVALS";
/// Set in the child that measures the layer's overhead.
const OVERHEAD_VAR: &str = "TIDEMARK_BENCH_OVERHEAD";
/// Pairs of runs (bare, then tidemark growth) the overhead child interleaves.
const OVERHEAD_PAIRS: usize = 8;

/// Processes run for each case in a full run.
const REPEATS: usize = 5;
/// Processes run for each input-pipeline case in a full run.
const PIPELINE_REPEATS: usize = 3;

/// The standard workloads, by config file.
const WORKLOADS: [(&str, &str); 5] = [
    ("W0", "configs/bench/w0.toml"),
    ("W1", "configs/bench/w1.toml"),
    ("W2", "configs/bench/w2.toml"),
    ("W3", "configs/bench/w3.toml"),
    ("W4", "configs/bench/w4.toml"),
];

/// A row of the table, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// The workload in plain Burn.
    Bare,
    /// Allocate on demand, release nothing at the end.
    Growth,
    /// Reserve up front: 125% of the growth case's peak reserved (on flex, heap held by the
    /// allocator; on CubeCL, pool pages).
    Preallocate,
    /// A limit the run fits in: 125% of the growth case's peak of the figure limits apply to
    /// (in use on flex, reserved in CubeCL pools).
    Limit,
    /// A limit it does not fit in (halfway between growth's resting in-use and that peak), with
    /// `on_limit = "shrink"`.
    LimitShrink,
    /// The same limit with `on_limit = "fit"`: the micro-batch picked before the first step.
    LimitFit,
    /// Growth with `clear = "between_runs"`: the second of two runs in one process.
    Clear,
}

impl Policy {
    const ALL: [Policy; 7] = [
        Policy::Bare,
        Policy::Growth,
        Policy::Preallocate,
        Policy::Limit,
        Policy::LimitShrink,
        Policy::LimitFit,
        Policy::Clear,
    ];

    fn name(self) -> &'static str {
        match self {
            Policy::Bare => "bare Burn",
            Policy::Growth => "growth",
            Policy::Preallocate => "preallocate",
            Policy::Limit => "limit (fits)",
            Policy::LimitShrink => "limit + shrink",
            Policy::LimitFit => "limit + fit",
            Policy::Clear => "clear between runs",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Policy::Bare => "bare",
            Policy::Growth => "growth",
            Policy::Preallocate => "preallocate",
            Policy::Limit => "limit",
            Policy::LimitShrink => "limit-shrink",
            Policy::LimitFit => "limit-fit",
            Policy::Clear => "clear",
        }
    }

    fn from_key(key: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.key() == key)
    }
}

/// What a child process was asked to run.
#[derive(Debug, Clone)]
pub struct CaseSpec {
    pub workload: String,
    pub config: String,
    pub backend: Backend,
    pub policy: Policy,
    pub quick: bool,
    pub growth: Option<GrowthFigures>,
}

/// The growth case's figures, which size the limits and the reservation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GrowthFigures {
    pub peak_in_use: u64,
    pub rest_in_use: u64,
    pub peak_reserved: u64,
    /// On CubeCL pools, the pages its training held (the epochs' figures; the summary's peak
    /// also counts the advisor's probes after the run).
    #[serde(default)]
    pub train_reserved: u64,
    /// The growth run's highest peak by category.
    pub breakdown: Option<Breakdown>,
}

/// What a case measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CaseResult {
    pub median_step_ms: Option<f64>,
    /// The last epoch's time per step's worth of samples (its training time, first step's
    /// start to last step's end, over its samples): the median step plus what the epoch
    /// spends between steps, on slow steps and on its short last step.
    #[serde(default)]
    pub epoch_step_ms: Option<f64>,
    pub steps_timed: usize,
    pub peak_in_use: u64,
    pub rest_in_use: u64,
    pub peak_reserved: u64,
    /// The highest figure reserved at an epoch's end (pool pages stay reserved through a run
    /// under `growth`, so on pools it is what training took).
    #[serde(default)]
    pub train_reserved: u64,
    pub fragmentation: Option<f64>,
    pub retained_in_use: Option<i64>,
    pub retained_reserved: Option<i64>,
    /// Why the case did not run, or what else happened (a shrink).
    pub note: String,
    /// The run's highest peak by category.
    pub breakdown: Option<Breakdown>,
    /// The interleaved comparison's figures (only from the overhead child).
    #[serde(default)]
    pub overhead: Option<Overhead>,
    /// Every timed step's interval, in order (ms): written by the child where
    /// `TIDEMARK_BENCH_INTERVALS` names a directory, not reported.
    #[serde(skip)]
    pub intervals_ms: Vec<f64>,
}

/// The bare loop against tidemark's growth run, alternating in one process: each one's median
/// over the pairs of its median step and of its last epoch's time per step, and each pair's
/// ratios.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Overhead {
    pub bare_step_ms: f64,
    pub step_ms: f64,
    pub bare_epoch_ms: f64,
    pub epoch_ms: f64,
    /// Per pair: tidemark over bare, median step and last epoch per step.
    pub pairs: Vec<(f64, f64)>,
}

pub fn main() {
    // Mesa's Vulkan driver (wgpu on lavapipe) complains on stderr without it. Set before any
    // thread starts.
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir());
    }
    // A case's process trains on this thread as `tidemark train` does: one of the compute
    // threads (the bare loop's too, so that "vs bare" compares the loops, not the threads).
    if std::env::var_os(CASE_VAR).is_some() || std::env::var_os(pipeline::PIPELINE_VAR).is_some() {
        tidemark::backend::join_compute_pool();
    }
    if let Ok(case) = std::env::var(CASE_VAR) {
        return run_child(&case);
    }
    if let Ok(case) = std::env::var(pipeline::PIPELINE_VAR) {
        let result = pipeline::run_child(&case);
        println!(
            "RESULT {}",
            serde_json::to_string(&result).expect("serialise")
        );
        return;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick =
        args.iter().any(|a| a == "--quick") || std::env::var_os("TIDEMARK_BENCH_QUICK").is_some();
    let filter = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map(|f| f.to_lowercase());
    println!(
        "tidemark policy benchmark ({}): each case in its own process; step time is the median \
         of synchronised optimizer steps",
        if quick { "quick" } else { "full" }
    );
    for backend in compiled_backends() {
        let cost = layer_cost_us(backend);
        println!(
            "\n{backend}: tidemark's memory layer costs {cost:.2} µs per step (probe window, \
             two probe readings and limit decisions; mean of 10,000)"
        );
        for (workload, config) in WORKLOADS {
            let label = format!("{}/{}", workload, backend).to_lowercase();
            if filter.as_ref().is_some_and(|f| !label.contains(f.as_str())) {
                continue;
            }
            run_workload(workload, config, backend, quick);
        }
        let label = format!("pipeline/{backend}");
        if filter.as_ref().is_none_or(|f| label.contains(f.as_str())) {
            pipeline::run(backend, quick, if quick { 1 } else { PIPELINE_REPEATS });
        }
    }
}

fn run_workload(workload: &str, config: &str, backend: Backend, quick: bool) {
    println!(
        "\n{workload} on {backend} ({config}); \"vs bare\": the median over the rounds of each \
         round's ratio to bare Burn's process"
    );
    println!(
        "| policy | median step | vs bare | last epoch per step | vs bare | peak in use | \
         peak reserved | fragmentation | retained in use | retained reserved | note |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    // Machine noise between processes is larger than the differences measured, so each
    // case runs several times, and the cases take turns (a round runs each once, in the
    // table's order), so that a busier minute of the machine falls on every row alike. The
    // limits and the reservation are sized from the first round's growth process.
    let repeats = if quick { 1 } else { REPEATS };
    let mut growth = None;
    let mut runs: Vec<Vec<CaseResult>> = vec![Vec::new(); Policy::ALL.len()];
    for _ in 0..repeats {
        for (policy, results) in Policy::ALL.into_iter().zip(&mut runs) {
            let spec = CaseSpec {
                workload: workload.into(),
                config: config.into(),
                backend,
                policy,
                quick,
                growth: growth.clone(),
            };
            let result = spawn(&spec);
            if policy == Policy::Growth && growth.is_none() && result.median_step_ms.is_some() {
                growth = Some(GrowthFigures {
                    peak_in_use: result.peak_in_use,
                    rest_in_use: result.rest_in_use,
                    peak_reserved: result.peak_reserved,
                    train_reserved: result.train_reserved,
                    breakdown: result.breakdown.clone(),
                });
            }
            results.push(result);
        }
    }
    // Each row against bare Burn round by round (its process over the bare process of the
    // same round), the median of those ratios: the processes of one round ran within the
    // same minute or two.
    let bare_at = Policy::ALL.iter().position(|p| *p == Policy::Bare);
    let bare_runs = runs[bare_at.expect("bare Burn is a case")].clone();
    for (policy, mut results) in Policy::ALL.into_iter().zip(runs) {
        let against = (policy != Policy::Bare).then(|| Against {
            step: paired_median(&results, &bare_runs, |r| r.median_step_ms),
            epoch: paired_median(&results, &bare_runs, |r| r.epoch_step_ms),
        });
        results.sort_by(|a, b| {
            a.median_step_ms
                .unwrap_or(f64::MAX)
                .total_cmp(&b.median_step_ms.unwrap_or(f64::MAX))
        });
        // The process with the median step time; the note gives the spread of all of them.
        let spread = match (
            results.first().and_then(|r| r.median_step_ms),
            results.last().and_then(|r| r.median_step_ms),
        ) {
            (Some(lo), Some(hi)) if repeats > 1 => {
                format!("{repeats} processes, {lo:.3}-{hi:.3} ms; ")
            }
            _ => String::new(),
        };
        // The last epoch's figure is its own median over the processes, as the step's is: one
        // epoch of a process is a short interval, and one slow epoch must not make the row.
        let mut epochs: Vec<f64> = results.iter().filter_map(|r| r.epoch_step_ms).collect();
        let epoch_step_ms = median(&mut epochs);
        let mut result = results.swap_remove(results.len() / 2);
        result.epoch_step_ms = epoch_step_ms.or(result.epoch_step_ms);
        result.note = format!("{spread}{}", result.note);
        print_row(policy, &result, against);
    }
    print_overhead(&CaseSpec {
        workload: workload.into(),
        config: config.into(),
        backend,
        policy: Policy::Growth,
        quick,
        growth: None,
    });
}

/// The overhead child: after one warm-up run of each, alternates the bare loop and tidemark's
/// growth run in this one process, so both see the same process state, and reports the median
/// of each one's per-run figures.
fn overhead(spec: &CaseSpec) -> CaseResult {
    let out = tempfile::tempdir().expect("a temporary directory");
    let (mut bare_step, mut step, mut bare_epoch, mut epoch) = (vec![], vec![], vec![], vec![]);
    let mut pairs = Vec::new();
    for pair in 0..=OVERHEAD_PAIRS {
        let bare = bare::run_once(spec);
        let cfg = case::variant(&case::growth_config(spec, out.path()), |b| {
            b.name(format!("overhead-{pair}"))
        });
        let ours = case::measured_run(cfg);
        let figures = |r: &CaseResult| Some((r.median_step_ms?, r.epoch_step_ms?));
        if let (true, Some(b), Some(o)) = (pair > 0, figures(&bare), figures(&ours)) {
            bare_step.push(b.0);
            step.push(o.0);
            bare_epoch.push(b.1);
            epoch.push(o.1);
            pairs.push((o.0 / b.0, o.1 / b.1));
        }
    }
    let overhead = (|| {
        Some(Overhead {
            bare_step_ms: median(&mut bare_step)?,
            step_ms: median(&mut step)?,
            bare_epoch_ms: median(&mut bare_epoch)?,
            epoch_ms: median(&mut epoch)?,
            pairs,
        })
    })();
    CaseResult {
        steps_timed: bare_step.len(),
        note: match overhead {
            Some(_) => String::new(),
            None => "no pair timed both its steps and its last epoch (an epoch's first step is \
                     not timed)"
                .into(),
        },
        overhead,
        ..CaseResult::default()
    }
}

/// Prints the interleaved comparison of the bare loop and tidemark's growth run.
fn print_overhead(spec: &CaseSpec) {
    let case = format!(
        "{}:{}:{}:growth:{}",
        spec.workload,
        spec.config,
        spec.backend,
        u8::from(spec.quick)
    );
    let result = run_in_child::<CaseResult>(&[(CASE_VAR, case), (OVERHEAD_VAR, "1".into())])
        .and_then(|r| r.overhead.ok_or(r.note));
    let percent = |ratio: f64| format!("{:+.1}%", (ratio - 1.0) * 100.0);
    match result {
        Ok(o) => println!(
            "\nOverhead, measured in one process ({OVERHEAD_PAIRS} alternating pairs of runs \
             after a warm-up pair; medians): median step bare Burn {:.3} ms, tidemark growth \
             {:.3} ms, {}; last epoch per step {:.3} ms and {:.3} ms, {}; pair by pair \
             (step, epoch): {}",
            o.bare_step_ms,
            o.step_ms,
            percent(o.step_ms / o.bare_step_ms),
            o.bare_epoch_ms,
            o.epoch_ms,
            percent(o.epoch_ms / o.bare_epoch_ms),
            (o.pairs.iter())
                .map(|(s, e)| format!("{} {}", percent(*s), percent(*e)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Err(why) => println!("\nOverhead: the interleaved case failed: {why}"),
    }
}

/// A row's figures against bare Burn's, as ratios (`None` where a round lacks one).
#[derive(Debug, Clone, Copy)]
struct Against {
    step: Option<f64>,
    epoch: Option<f64>,
}

/// The median over the rounds of `figure(row's process) / figure(bare's process)`.
fn paired_median(
    results: &[CaseResult],
    bare: &[CaseResult],
    figure: impl Fn(&CaseResult) -> Option<f64>,
) -> Option<f64> {
    let mut ratios: Vec<f64> = (results.iter().zip(bare))
        .filter_map(|(r, b)| Some(figure(r)? / figure(b)?))
        .collect();
    median(&mut ratios)
}

/// A row; `against`: its figures against bare Burn's (`None` for the bare row).
fn print_row(policy: Policy, r: &CaseResult, against: Option<Against>) {
    let ran = r.median_step_ms.is_some();
    let bytes = |b: u64| if ran { format_bytes(b) } else { "-".into() };
    let signed = |b: Option<i64>| b.map_or("-".into(), format_signed_bytes);
    let ms = |ms: Option<f64>| ms.map_or("-".into(), |ms| format!("{ms:.3} ms"));
    let percent = |ratio: Option<f64>| match (against, ratio) {
        (None, _) => "".into(),
        (Some(_), Some(ratio)) if ran => format!("{:+.1}%", (ratio - 1.0) * 100.0),
        _ => "-".into(),
    };
    println!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        policy.name(),
        ms(r.median_step_ms),
        percent(against.and_then(|a| a.step)),
        ms(r.epoch_step_ms),
        percent(against.and_then(|a| a.epoch)),
        bytes(r.peak_in_use),
        bytes(r.peak_reserved),
        r.fragmentation
            .map_or("-".into(), |f| format!("{:.1}%", f * 100.0)),
        signed(r.retained_in_use),
        signed(r.retained_reserved),
        r.note.replace('|', "/"),
    );
}

/// Runs one case in a fresh process and reads its result line.
fn spawn(spec: &CaseSpec) -> CaseResult {
    let case = format!(
        "{}:{}:{}:{}:{}",
        spec.workload,
        spec.config,
        spec.backend,
        spec.policy.key(),
        u8::from(spec.quick)
    );
    let mut vars = vec![(CASE_VAR, case)];
    if let Some(g) = &spec.growth {
        vars.push((GROWTH_VAR, serde_json::to_string(&g).expect("serialise")));
    }
    run_in_child(&vars).unwrap_or_else(|note| CaseResult {
        note,
        ..CaseResult::default()
    })
}

/// Starts this benchmark binary again with `vars` set and reads the `RESULT` line it prints;
/// if there is none, says why (the exit status and the last line of its stderr).
pub fn run_in_child<T: serde::de::DeserializeOwned>(vars: &[(&str, String)]) -> Result<T, String> {
    let exe = std::env::current_exe().expect("the benchmark binary's path");
    let output = Command::new(exe)
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .env_remove("TIDEMARK_BENCH_QUICK")
        .output()
        .map_err(|e| format!("could not start the case: {e}"))?;
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .and_then(|json| serde_json::from_str(json).ok())
        .ok_or_else(|| {
            format!(
                "case failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            )
        })
}

/// The child side: parse the case, run it, print one `RESULT` line.
fn run_child(case: &str) {
    let parts: Vec<&str> = case.split(':').collect();
    let [workload, config, backend, policy, quick] = parts[..] else {
        panic!("{CASE_VAR} = {case:?} is not workload:config:backend:policy:quick");
    };
    let backend = Backend::ALL
        .into_iter()
        .find(|b| b.name() == backend)
        .expect("a known backend");
    let spec = CaseSpec {
        workload: workload.into(),
        config: config.into(),
        backend,
        policy: Policy::from_key(policy).expect("a known policy"),
        quick: quick == "1",
        growth: std::env::var(GROWTH_VAR)
            .ok()
            .and_then(|g| serde_json::from_str(&g).ok()),
    };
    let result = if std::env::var_os(OVERHEAD_VAR).is_some() {
        overhead(&spec)
    } else {
        match spec.policy {
            Policy::Bare => bare::run(&spec),
            _ => case::run(&spec),
        }
    };
    if let Some(dir) = std::env::var_os(INTERVALS_VAR) {
        keep_intervals(Path::new(&dir), &spec, &result.intervals_ms);
    }
    println!(
        "RESULT {}",
        serde_json::to_string(&result).expect("serialise")
    );
}

/// Writes a case's step intervals to `dir`, one per line in ms, as
/// `<workload>-<policy>-<nanoseconds since the epoch>.txt`: the name orders a run's processes
/// by their end (`scripts/bench-intervals.py` reads them).
fn keep_intervals(dir: &Path, spec: &CaseSpec, intervals_ms: &[f64]) {
    if intervals_ms.is_empty() {
        return;
    }
    let nanos = (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH))
        .map_or(0, |d| d.as_nanos());
    let name = format!("{}-{}-{nanos}.txt", spec.workload, spec.policy.key());
    let text: String = intervals_ms.iter().map(|ms| format!("{ms}\n")).collect();
    if let Err(e) =
        std::fs::create_dir_all(dir).and_then(|()| std::fs::write(dir.join(&name), text))
    {
        eprintln!("{INTERVALS_VAR}: {}: {e}", dir.join(name).display());
    }
}

/// What tidemark's memory layer adds to one optimizer step of one micro-batch, timed alone on
/// `backend`: opening the step window, then twice (after the backward pass and after the
/// update) a probe reading and the policies' decision, with a limit configured so that the
/// limit policy runs. These are all the per-step calls `Trainer` makes into the layer.
fn layer_cost_us(backend: Backend) -> f64 {
    use tidemark::config::{ConfigBuilder, MemorySize, OnLimit};
    use tidemark::memory::{MemoryMeter, Phase, Policies, RunState};

    let config = ConfigBuilder::new("layer")
        .device(backend, 0)
        .memory_limit(MemorySize::Bytes(u64::MAX / 2), OnLimit::Fail)
        .build()
        .expect("defaults validate");
    let device = tidemark::backend::select(&config.device).expect("compiled in");
    let policies = Policies::from_config(&config.memory, None).expect("a byte limit");
    let mut meter = MemoryMeter::new(&device);
    let state = RunState {
        epoch: 1,
        step: 1,
        layout: tidemark::memory::Layout::new(256, 1),
        resting_estimate: 0,
        previous_attempt: None,
    };
    const CALLS: u32 = 10_000;
    let start = std::time::Instant::now();
    for _ in 0..CALLS {
        meter.begin_window();
        for _ in 0..2 {
            let usage = meter.observe();
            std::hint::black_box(policies.decide(Phase::Step, &usage, &state));
        }
    }
    start.elapsed().as_secs_f64() * 1e6 / f64::from(CALLS)
}
