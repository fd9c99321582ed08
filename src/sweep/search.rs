//! A search: the `[sweep]` table's trials, each checked before any trains, then trained one
//! after another in one process (each in `trial-NNN/` under the sweep's directory, with its
//! resolved `config.toml`), ranked by the monitored metric. A trial that fails is recorded
//! with its reason and the search goes on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::packed::{train_packed, Packed};
use super::picture::picture;
use super::preflight::arrange;
use super::rank::{rank, ranking, TrialRow, TrialStatus};
use super::schedule::{attach, Schedule};
use super::shard::Shard;
use super::space::{check_order, literal, Order, Packing, Space, Trial};
use super::{read_plan, train_or_resume, write_plan, Plan, SweepRow};
use crate::config::{parse, to_toml, ConfigError, MonitorMode, Override, RunConfig};
use crate::error::Error;
use crate::record::{write_atomic, Observer, RunStatus, RunSummary};
use crate::report::render_search_svg;
use crate::task::{unknown_monitor, validation_figures};
use crate::train::run_dir;

/// What a search plans, in `plan.json`: resuming trains the same trials.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SearchPlan {
    /// The metric the trials are ranked by.
    pub monitor: String,
    /// Whether lower or higher is better.
    pub mode: MonitorMode,
    /// The trials, in order.
    pub trials: Vec<Trial>,
    /// The order a process trains its trials in.
    #[serde(default)]
    pub order: Order,
    /// Trials at once, and the memory they may hold together.
    #[serde(default)]
    pub packing: Packing,
}

/// Each trial's config: `config` with the trial's values, named after the trial, in `dir`.
/// The first trial whose values do not validate is the error, naming the key and the value.
pub fn trial_configs(
    config: &RunConfig,
    trials: &[Trial],
    dir: &Path,
) -> Result<Vec<RunConfig>, ConfigError> {
    let base = to_toml(config);
    trials
        .iter()
        .map(|trial| trial_config(&base, trial, dir))
        .collect()
}

/// One trial's config: the base config's TOML `base` with the trial's values, named after
/// the trial, in `dir`.
fn trial_config(base: &str, trial: &Trial, dir: &Path) -> Result<RunConfig, ConfigError> {
    let mut overrides: Vec<Override> = trial
        .values
        .iter()
        .map(|(key, value)| Override {
            key: key.clone(),
            value: value.clone(),
            text: format!("{key}={}", literal(value)),
        })
        .collect();
    overrides.push(set("run.name", toml::Value::String(trial.name())));
    let out = dir.display().to_string();
    overrides.push(set("run.output_dir", toml::Value::String(out)));
    parse(base, "config.toml", &overrides).map_err(|e| in_trial(e, trial))
}

/// Checks every trial's config, and that its task reports `monitor`, building one config at
/// a time.
fn check_trials(
    base: &str,
    trials: &[Trial],
    dir: &Path,
    monitor: &str,
) -> Result<(), ConfigError> {
    trials.iter().try_for_each(|trial| {
        let config = trial_config(base, trial, dir)?;
        check_monitor(monitor, &config)
    })
}

/// An override of `key` with `value`, as `--set` would give it.
pub(super) fn set(key: &str, value: toml::Value) -> Override {
    Override {
        key: key.into(),
        text: format!("{key}={value}"),
        value,
    }
}

/// Refuses a `sweep.monitor` that a trial's task does not report: every trial would train, and
/// none would have a value to rank by.
fn check_monitor(monitor: &str, config: &RunConfig) -> Result<(), ConfigError> {
    let reported = validation_figures(crate::builtin::metric_names(config));
    match reported.contains(&monitor.to_string()) {
        true => Ok(()),
        false => Err(ConfigError {
            origin: "[sweep]".into(),
            key: Some("sweep.monitor".into()),
            message: unknown_monitor("sweep.monitor", monitor, &reported),
        }),
    }
}

/// A trial's error, said as the trial's: `[sweep] trial-003 (train.lr=-1): ...`.
fn in_trial(e: ConfigError, trial: &Trial) -> ConfigError {
    let origin = match e.origin.strip_prefix("--set ") {
        Some(value) => format!("[sweep] {} ({value})", trial.name()),
        None => format!("[sweep] {} ({})", trial.name(), trial.describe()),
    };
    ConfigError { origin, ..e }
}

/// Plans and runs the search of `space` over `config`, in `<output_dir>/<name>-sweep/` (a new
/// directory; with a `shard`, the one directory every shard shares, trained only in this
/// shard's trials). `observer(i, n)` watches trial `i` of `n`; `observer(0, n)` is told what
/// the search itself does before any trial trains (its probes and the order they give).
pub fn search(
    config: &RunConfig,
    space: &Space,
    shard: Option<Shard>,
    observer: impl FnMut(usize, usize) -> Box<dyn Observer>,
) -> Result<(PathBuf, Vec<TrialRow>), Error> {
    let trials = space.trials();
    // Every trial is checked before the sweep's directory exists.
    check_trials(
        &to_toml(config),
        &trials,
        &config.run.output_dir,
        &space.monitor,
    )?;
    check_order(space.order, space.packing.parallel, "--parallel")?;
    if space.packing.parallel > 1 {
        super::budget::resolve(&space.packing, config)?;
    }
    let name = format!("{}-sweep", config.run.name);
    let plan = SearchPlan {
        monitor: space.monitor.clone(),
        mode: space.mode,
        trials,
        order: space.order,
        packing: space.packing,
    };
    let dir = match shard {
        None => run_dir::create(&config.run.output_dir, &name)?,
        Some(_) => shared_dir(&config.run.output_dir.join(&name), &plan)?,
    };
    let path = dir.join("config.toml");
    write_atomic(&path, to_toml(config).as_bytes()).map_err(|e| Error::io(&path, e))?;
    write_plan(&dir, &Plan::search(plan.clone()))?;
    run_trials(&dir, config, &plan, shard, observer)
}

/// The sweep directory shards share: created by the first, and refused if an earlier search
/// with other trials planned it.
fn shared_dir(dir: &Path, plan: &SearchPlan) -> Result<PathBuf, Error> {
    run_dir::make_output_dir(dir)?;
    if dir.join("plan.json").is_file() {
        let earlier = read_plan(dir)?.search;
        if earlier.as_ref().map(|p| (&p.trials, &p.monitor)) != Some((&plan.trials, &plan.monitor))
        {
            return Err(Error::Config(ConfigError {
                origin: dir.display().to_string(),
                key: None,
                message: "holds a sweep with other trials; shards of one search share its \
                          directory, so give this search another run.name or run.output_dir"
                    .into(),
            }));
        }
    }
    Ok(dir.to_path_buf())
}

/// Trains the plan's trials (a `shard`'s only) that have not finished, in the plan's
/// [`Order`] (largest probed step first, by default), and writes their
/// ranking: `sweep.json` and `sweep.md`, or a shard's own `shard-I-of-N.json`, which
/// `tidemark report` merges.
///
/// Nothing per trial stays in memory while the trials train (but a failed trial's error): each
/// trial's config is built when it is needed (checked, probed, trained) and dropped after, and
/// the rows are read back from the trials' `summary.json` once all have trained. So a search of
/// any length keeps the process flat (docs/search.md, "A long search stays flat").
pub fn run_trials(
    dir: &Path,
    config: &RunConfig,
    plan: &SearchPlan,
    shard: Option<Shard>,
    mut observer: impl FnMut(usize, usize) -> Box<dyn Observer>,
) -> Result<(PathBuf, Vec<TrialRow>), Error> {
    let base = to_toml(config);
    check_trials(&base, &plan.trials, dir, &plan.monitor)?;
    let config_of = |t: &Trial| trial_config(&base, t, dir).map_err(Error::Config);
    let n = plan.trials.len();
    let mine = plan.trials.iter().filter(|t| in_shard(shard, t)).collect();
    // A parallel search's budget is known before its probes run.
    let budget = match plan.packing.parallel > 1 {
        true => Some(super::budget::resolve(&plan.packing, config)?),
        false => None,
    };
    let mine = arrange(
        mine,
        &config_of,
        plan.order,
        budget.is_some(),
        dir,
        shard,
        &mut *observer(0, n),
    )?;
    let mut errors = BTreeMap::new();
    let one_by_one = match budget {
        Some(budget) => {
            let packed = Packed {
                parallel: plan.packing.parallel,
                budget,
                fit: plan.packing.fit_in_lease,
            };
            let ended = train_packed(dir, packed, shard, mine, &config_of, &mut *observer(0, n))?;
            for (trial, error) in ended {
                if let Some(e) = error {
                    errors.insert(trial.number, e);
                }
            }
            Vec::new()
        }
        None => mine,
    };
    for (trial, _) in one_by_one {
        let run_dir = dir.join(trial.name());
        let trained = config_of(trial)
            .and_then(|cfg| train_or_resume(cfg, &run_dir, observer(trial.number, n)));
        if let Err(e) = trained {
            errors.insert(trial.number, e.to_string());
        }
    }
    let mut rows = read_rows(dir, plan, shard, errors)?;
    rank(&mut rows, plan.mode);
    match shard {
        None => write_results(dir, plan, &rows)?,
        Some(shard) => {
            let path = dir.join(format!("{}.json", shard.name()));
            let json = serde_json::to_vec_pretty(&rows).expect("rows serialise");
            write_atomic(&path, &json).map_err(|e| Error::io(&path, e))?;
        }
    }
    Ok((dir.to_path_buf(), rows))
}

fn in_shard(shard: Option<Shard>, trial: &Trial) -> bool {
    shard.is_none_or(|s| s.includes(trial.number))
}

/// The rows of the plan's trials (a `shard`'s only), from their `summary.json`, with the
/// `errors` of those that failed. A trial that fails still writes its summary, with its memory
/// figures, when it got as far as its run directory.
///
/// Every summary is read before anything is written: one that cannot be read stops the
/// ranking (a report, say), which would otherwise rank that trial as not run and rewrite the
/// results; a trial that failed keeps its own error whatever its file holds. Each row gets its
/// lease and times where the trials ran in parallel.
fn read_rows(
    dir: &Path,
    plan: &SearchPlan,
    shard: Option<Shard>,
    mut errors: BTreeMap<usize, String>,
) -> Result<Vec<TrialRow>, Error> {
    let mut rows = Vec::new();
    for t in plan.trials.iter().filter(|t| in_shard(shard, t)) {
        let error = errors.remove(&t.number);
        let summary = match (RunSummary::read(&dir.join(t.name())), &error) {
            (Ok(summary), _) => summary,
            (Err(_), Some(_)) => None,
            (Err(e), None) => return Err(e.into()),
        };
        rows.push(row(t, summary, error, &plan.monitor));
    }
    attach(&mut rows, &Schedule::merged(dir)?);
    Ok(rows)
}

/// Every trial of the search in `dir`, from the trials' own `summary.json` (whichever shard
/// or process trained them), ranked; writes `sweep.json` and `sweep.md` from them.
pub fn merge(dir: &Path) -> Result<(Vec<TrialRow>, SearchPlan), Error> {
    let plan = read_plan(dir)?.search.ok_or_else(|| {
        Error::Config(ConfigError {
            origin: dir.display().to_string(),
            key: None,
            message: "a sweep of runs, not a search: its table is sweep.md".into(),
        })
    })?;
    let mut rows = read_rows(dir, &plan, None, BTreeMap::new())?;
    rank(&mut rows, plan.mode);
    write_results(dir, &plan, &rows)?;
    Ok((rows, plan))
}

/// A trial's row: its summary's figures, or what stopped it (`error`, or the summary's).
fn row(
    trial: &Trial,
    summary: Option<RunSummary>,
    error: Option<String>,
    monitor: &str,
) -> TrialRow {
    let (status, reason) = match (summary.as_ref().map(|s| &s.status), error) {
        (Some(RunStatus::Completed), _) => (TrialStatus::Completed, None),
        (_, Some(e)) => (TrialStatus::Failed, Some(e)),
        (Some(RunStatus::Failed(e)), None) => (TrialStatus::Failed, Some(e.clone())),
        (None, None) => (TrialStatus::NotRun, None),
    };
    TrialRow {
        rank: None,
        trial: trial.number,
        name: trial.name(),
        values: trial
            .values
            .iter()
            .map(|(k, v)| (k.clone(), literal(v)))
            .collect(),
        status,
        reason,
        monitored: summary
            .as_ref()
            .filter(|_| status == TrialStatus::Completed)
            .and_then(|s| monitored(s, monitor)),
        epochs: summary.as_ref().map(|s| s.epochs),
        lease_bytes: None,
        started_s: None,
        ended_s: None,
        memory: summary.map(|s| SweepRow::of(trial.number, s)),
    }
}

/// The run's value of `monitor`: the best epoch's with early stopping on it, else the last.
fn monitored(summary: &RunSummary, monitor: &str) -> Option<f64> {
    if summary.monitor.as_deref() == Some(monitor) {
        if let Some(best) = summary.best_value {
            return Some(best);
        }
    }
    match monitor {
        "val_loss" => summary.final_val_loss,
        key => summary.metric(key),
    }
}

/// `sweep.json` and `sweep.md`.
fn write_results(dir: &Path, plan: &SearchPlan, rows: &[TrialRow]) -> Result<(), Error> {
    let best = rows.iter().find(|r| r.rank == Some(1));
    let packed = Schedule::merged(dir)?.packed();
    let json = serde_json::json!({
        "monitor": plan.monitor,
        "mode": plan.mode,
        "best": best.map(|r| r.name.clone()),
        "best_config": best.map(|r| dir.join(&r.name).join("config.toml")),
        "parallel": packed.map_or(1, |(_, parallel)| parallel),
        "budget_bytes": packed.map(|(budget, _)| budget),
        "trials": rows,
    });
    let path = dir.join("sweep.json");
    let bytes = serde_json::to_vec_pretty(&json).expect("rows serialise");
    write_atomic(&path, &bytes).map_err(|e| Error::io(&path, e))?;
    let path = dir.join("sweep.md");
    let mut text = ranking(rows, &plan.monitor, plan.mode, dir);
    if let Some((budget, parallel)) = packed {
        text.push_str(&format!(
            "Trials ran up to {parallel} at a time, each in its own process under its lease, the \
             leases together under a budget of {}.\n",
            crate::memory::format_bytes(budget)
        ));
    }
    write_atomic(&path, text.as_bytes()).map_err(|e| Error::io(&path, e))?;
    let budget = packed.map(|(budget, _)| budget);
    render_search_svg(&picture(plan, rows, budget), &dir.join("sweep.svg"))
        .map_err(|e| Error::Device(format!("drawing {e}")))
}
