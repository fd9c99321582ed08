//! `tidemark sweep`: trainings one after another in one process, each with its own run
//! directory, under the configured `clear` policy, and a table of what each run took and what
//! it gave back. With a `[sweep]` table in the config, a search ([`search`]): its trials
//! trained largest first (by one probed step of each, `preflight`) and ranked by the monitored
//! metric; without, N runs of the same config with new seeds.

mod budget;
mod checks;
mod child;
mod children;
mod draws;
mod in_turn;
mod lease;
mod packed;
mod parallel;
mod parent_death;
mod picture;
mod plan;
mod preflight;
mod prune;
mod rank;
mod resume_set;
mod rows;
mod schedule;
mod search;
mod shard;
mod signals;
mod space;
mod table;
mod trial_config;

pub use checks::check_search;
pub use child::run_child;
pub use lease::LEASE_MARGIN;
pub use prune::{PruneConfig, PruneMethod};
pub use rank::{rank, ranking, TrialRow, TrialStatus};
pub use resume_set::Changes;
pub use schedule::{Schedule, Slot};
pub use search::{merge, run_trials, search, SearchPlan};
pub use shard::Shard;
pub use space::{Budget, Domain, Method, Order, Packing, Space, Trial, DEFAULT_BUDGET_SHARE};
pub use table::table;
pub use trial_config::trial_configs;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::config::{to_toml, ConfigBuilder, ConfigError, RunConfig};
use crate::error::Error;

use crate::record::{write_atomic, Observer, Retained};
use crate::record::{RunStatus, RunSummary};
use crate::train::resume::check_config;
use crate::train::{run_dir, Trainer};
use plan::{read_plan, write_plan, Plan};

/// Tolerance for bytes kept after release, as a share of the run's peak.
pub const RETAINED_TOLERANCE: f64 = 0.01;
/// Tolerance for resident memory kept after release (runs 2..N), as a share of what the run
/// added at its peak.
pub const RSS_TOLERANCE: f64 = 0.05;
/// Resident memory kept that is noise whatever the run added: the resident set moves by whole
/// pages and allocator chunks, so a run that adds 100 KiB and keeps 100 KiB has not leaked.
pub const RSS_NOISE_BYTES: u64 = 1 << 20;

/// One run of a sweep.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepRow {
    /// 1-based run number.
    pub run: usize,
    /// The run directory.
    pub run_dir: PathBuf,
    /// Final training loss.
    pub final_loss: Option<f64>,
    /// Peak bytes in use.
    pub peak_bytes_in_use: u64,
    /// Bytes reserved after the run released its memory.
    pub reserved_at_end: u64,
    /// Bytes in use after release minus before the run.
    pub retained_bytes_in_use: i64,
    /// Bytes reserved after release minus before the run.
    pub retained_bytes_reserved: i64,
    /// Process resident set before the run.
    pub rss_before_bytes: u64,
    /// Peak process resident set during the run.
    pub rss_peak_bytes: u64,
    /// Process resident set after the release.
    pub rss_after_bytes: u64,
    /// The first run of its process, which carries the process's one-time state.
    #[serde(default)]
    pub first_in_process: bool,
}

impl SweepRow {
    /// `retained_bytes_in_use` as a share of the run's peak.
    pub fn retained_share(&self) -> f64 {
        self.retained_bytes_in_use.max(0) as f64 / self.peak_bytes_in_use.max(1) as f64
    }

    /// Resident memory kept: (after − before) / (peak − before).
    pub fn rss_share(&self) -> f64 {
        let taken = self
            .rss_peak_bytes
            .saturating_sub(self.rss_before_bytes)
            .max(1) as f64;
        (self.rss_after_bytes as f64 - self.rss_before_bytes as f64).max(0.0) / taken
    }

    /// Whether this run meets both release criteria (the RSS one from run 2 on).
    pub fn released(&self) -> bool {
        let kept = self.rss_after_bytes.saturating_sub(self.rss_before_bytes);
        self.retained_share() <= RETAINED_TOLERANCE
            && (self.run == 1
                || self.first_in_process
                || kept <= RSS_NOISE_BYTES
                || self.rss_share() <= RSS_TOLERANCE)
    }
}

/// What a resumed sweep finished with.
pub enum Swept {
    /// Runs of the same config.
    Runs(Vec<SweepRow>),
    /// A search's trials, ranked by `monitor`.
    Search {
        /// The trials, best first.
        rows: Vec<TrialRow>,
        /// The metric they are ranked by.
        monitor: String,
        /// Whether lower or higher is better.
        mode: crate::config::MonitorMode,
    },
}

/// Runs `config` `runs` times, reporting run `i` of `n` to `observer(i, n)`. Run `i` is named `run-<i>` with seed `seed + i - 1`, inside
/// `<output_dir>/<name>-sweep/` (`-sweep-2`, ... if that exists). Writes the base config and
/// the plan there first (for [`resume_sweep`]), then `sweep.json` and `sweep.md`.
pub fn sweep(
    config: &RunConfig,
    runs: usize,
    observer: impl FnMut(usize, usize) -> Box<dyn Observer>,
) -> Result<(PathBuf, Vec<SweepRow>), Error> {
    let name = format!("{}-sweep", config.run.name);
    let dir = run_dir::create(&config.run.output_dir, &name)?;
    let path = dir.join("config.toml");
    write_atomic(&path, to_toml(config).as_bytes()).map_err(|e| Error::io(&path, e))?;
    write_plan(&dir, &Plan { runs, search: None })?;
    run_all(&dir, config, runs, observer)
}

/// Continues the sweep in `dir` at the first run that did not finish: completed runs are kept
/// (their rows come from their `summary.json`), a run that stopped resumes from its latest
/// checkpoint, and the rest start. `config` must match the sweep's `config.toml` except in
/// the keys a resumed run may change; `runs`, if given, replaces the planned count, and
/// `changes` a search's trials at once and their budget ([`Changes`]).
pub fn resume_sweep(
    dir: &Path,
    config: &RunConfig,
    runs: Option<usize>,
    changes: Changes,
    mut observer: impl FnMut(usize, usize) -> Box<dyn Observer>,
) -> Result<(PathBuf, Swept), Error> {
    check_config(dir, config, crate::builtin::SECTIONS)?;
    let plan = read_plan(dir)?;
    if let Some(mut search) = plan.search {
        for line in changes.apply(&mut search.packing) {
            observer(0, search.trials.len()).message(&line);
        }
        space::check_order(search.order, search.packing.parallel, "--parallel")?;
        if runs.is_some() {
            return Err(Error::Config(ConfigError {
                origin: format!("--resume {}", dir.display()),
                key: None,
                message: "--runs repeats one config; this sweep is a search, whose trials \
                          come from its [sweep] table"
                    .into(),
            }));
        }
        let (dir, rows) = run_trials(dir, config, &search, None, observer)?;
        let (monitor, mode) = (search.monitor, search.mode);
        return Ok((
            dir,
            Swept::Search {
                rows,
                monitor,
                mode,
            },
        ));
    }
    if changes != Changes::default() {
        return Err(Error::Config(ConfigError {
            origin: format!("--resume {}", dir.display()),
            key: None,
            message: format!(
                "{} is a sweep of runs, and only a search's trials run in parallel (under \
                 sweep.parallel and sweep.budget)",
                dir.display()
            ),
        }));
    }
    let runs = runs.unwrap_or(plan.runs);
    if runs != plan.runs {
        write_plan(dir, &Plan { runs, search: None })?;
    }
    let (dir, rows) = run_all(dir, config, runs, observer)?;
    Ok((dir, Swept::Runs(rows)))
}

fn run_all(
    dir: &Path,
    config: &RunConfig,
    runs: usize,
    mut observer: impl FnMut(usize, usize) -> Box<dyn Observer>,
) -> Result<(PathBuf, Vec<SweepRow>), Error> {
    for run in 1..=runs {
        let cfg = ConfigBuilder::from_config(config)
            .output_dir(dir)
            .name(run_name(run))
            .seed(config.run.seed + run as u64 - 1)
            .build()?;
        let run_dir = dir.join(&cfg.run.name);
        // Its row is read back from its summary.json below: the sweep keeps nothing per run
        // in memory while it trains (see docs/search.md, "A long search stays flat").
        train_or_resume(cfg, &run_dir, observer(run, runs), None, None)?;
    }
    let rows = (1..=runs)
        .map(|run| Ok(SweepRow::of(run, summary(&dir.join(run_name(run)))?)))
        .collect::<Result<Vec<_>, Error>>()?;
    let json = serde_json::to_vec_pretty(&rows).expect("rows serialise");
    write_atomic(&dir.join("sweep.json"), &json)
        .map_err(|e| Error::io(dir.join("sweep.json"), e))?;
    write_atomic(&dir.join("sweep.md"), table(&rows).as_bytes())
        .map_err(|e| Error::io(dir.join("sweep.md"), e))?;
    Ok((dir.to_path_buf(), rows))
}

/// Trains `cfg` in `run_dir`: a run that finished before keeps its summary, one that stopped
/// resumes from its latest checkpoint, and the rest start. A run stopped before its first
/// checkpoint (a signal during its set-up) has nothing to resume from: it starts again in its
/// own directory, where the search reads it, not beside it in a `-2` one.
fn train_or_resume(
    cfg: RunConfig,
    run_dir: &Path,
    mut observer: Box<dyn Observer>,
    gate: Option<prune::GateSpec>,
    stop: Option<Arc<AtomicBool>>,
) -> Result<RunSummary, Error> {
    if let Some(summary) = finished(run_dir, cfg.train.epochs)? {
        observer.message(&format!("finished before: {}", run_dir.display()));
        return Ok(summary);
    }
    let mut trainer = Trainer::new(cfg).observer(observer);
    if let Some(gate) = gate {
        trainer = trainer.gate(gate.into_gate());
    }
    if let Some(stop) = stop {
        trainer = trainer.stop_when(stop);
    }
    let latest = run_dir.join("checkpoints").join("latest");
    if latest.symlink_metadata().is_ok() {
        // A checkpoint that cannot be read is the resume's error, naming it.
        return trainer.resume(run_dir).run();
    }
    if run_dir.exists() {
        std::fs::remove_dir_all(run_dir).map_err(|e| Error::io(run_dir, e))?;
    }
    trainer.run()
}

fn run_name(run: usize) -> String {
    format!("run-{run:02}")
}

/// The `summary.json` of a run that has just finished.
fn summary(run_dir: &Path) -> Result<RunSummary, Error> {
    RunSummary::read(run_dir)?.ok_or_else(|| {
        let path = run_dir.join("summary.json");
        Error::io(&path, std::io::ErrorKind::NotFound.into())
    })
}

/// The summary of a run in `run_dir` that completed `epochs` epochs (or more), if there is one.
/// A summary that cannot be read is an error: training the run again would replace what it
/// recorded on the strength of a damaged file.
pub(crate) fn finished(run_dir: &Path, epochs: usize) -> Result<Option<RunSummary>, Error> {
    Ok(RunSummary::read(run_dir)?.filter(|summary| {
        summary.status == RunStatus::Completed
            && summary.epochs >= epochs
            && summary.retained.is_some()
    }))
}

impl SweepRow {
    /// Run `run`'s row, from its summary.
    pub(crate) fn of(run: usize, summary: RunSummary) -> Self {
        let retained = summary.retained.unwrap_or(Retained {
            retained_bytes_in_use: 0,
            retained_bytes_reserved: 0,
            rss_before_bytes: 0,
            rss_peak_bytes: 0,
            rss_after_bytes: 0,
        });
        SweepRow {
            run,
            run_dir: summary.run_dir,
            final_loss: summary.final_loss,
            peak_bytes_in_use: summary.peak_bytes_in_use,
            reserved_at_end: (retained.retained_bytes_reserved
                + summary.baseline_bytes_reserved as i64)
                .max(0) as u64,
            retained_bytes_in_use: retained.retained_bytes_in_use,
            retained_bytes_reserved: retained.retained_bytes_reserved,
            rss_before_bytes: retained.rss_before_bytes,
            rss_peak_bytes: retained.rss_peak_bytes,
            rss_after_bytes: retained.rss_after_bytes,
            first_in_process: summary.run_in_process == 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn row(run: usize, retained: i64, rss: (u64, u64, u64)) -> SweepRow {
        SweepRow {
            run,
            run_dir: PathBuf::new(),
            final_loss: Some(0.5),
            peak_bytes_in_use: 1000,
            reserved_at_end: 0,
            retained_bytes_in_use: retained,
            retained_bytes_reserved: 0,
            rss_before_bytes: rss.0,
            rss_peak_bytes: rss.1,
            rss_after_bytes: rss.2,
            first_in_process: false,
        }
    }

    #[test]
    fn criteria_follow_the_documented_shares() {
        let mib = 1 << 20;
        let rss = |before: u64, peak: u64, after: u64| (before * mib, peak * mib, after * mib);
        assert!(row(2, 10, rss(100, 300, 110)).released());
        assert!(!row(2, 11, rss(100, 300, 100)).released(), "1.1% retained");
        assert!(
            !row(2, 0, rss(100, 300, 111)).released(),
            "5.5% of RSS kept"
        );
        // A small run's resident set moving by 1 MiB or less is noise, not a leak.
        assert!(row(2, 0, (100 * mib, 100 * mib + 1, 101 * mib)).released());
        assert!(!row(2, 0, (100 * mib, 140 * mib, 102 * mib + 1)).released());
        assert!(
            row(1, 0, rss(100, 300, 200)).released(),
            "run 1 may keep one-time state"
        );
        assert!((row(2, 0, rss(100, 300, 150)).rss_share() - 0.25).abs() < 1e-9);
    }
}
