//! A search: the `[sweep]` table's trials, each checked before any trains, then trained one
//! after another in one process (each in `trial-NNN/` under the sweep's directory, with its
//! resolved `config.toml`), ranked by the monitored metric. A trial that fails is recorded
//! with its reason and the search goes on.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::rank::{rank, ranking, TrialRow};
use super::space::{literal, Space, Trial};
use super::{finished, write_plan, Plan, SweepRow};
use crate::config::{parse, to_toml, ConfigError, MonitorMode, Override, RunConfig};
use crate::error::Error;
use crate::record::{write_atomic, Observer, RunStatus, RunSummary};
use crate::train::{run_dir, Checkpoint, Trainer};

/// What a search plans, in `plan.json`: resuming trains the same trials.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SearchPlan {
    /// The metric the trials are ranked by.
    pub monitor: String,
    /// Whether lower or higher is better.
    pub mode: MonitorMode,
    /// The trials, in order.
    pub trials: Vec<Trial>,
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
        .map(|trial| {
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
            parse(&base, "config.toml", &overrides).map_err(|e| in_trial(e, trial))
        })
        .collect()
}

fn set(key: &str, value: toml::Value) -> Override {
    Override {
        key: key.into(),
        text: format!("{key}={value}"),
        value,
    }
}

/// A trial's error, said as the trial's: `[sweep] trial 3 (train.lr=-1): ...`.
fn in_trial(e: ConfigError, trial: &Trial) -> ConfigError {
    let origin = match e.origin.strip_prefix("--set ") {
        Some(value) => format!("[sweep] {} ({value})", trial.name()),
        None => format!("[sweep] {} ({})", trial.name(), trial.describe()),
    };
    ConfigError { origin, ..e }
}

/// Plans and runs the search of `space` over `config`, in `<output_dir>/<name>-sweep/`.
pub fn search(
    config: &RunConfig,
    space: &Space,
    observer: impl FnMut(usize, usize) -> Box<dyn Observer>,
) -> Result<(PathBuf, Vec<TrialRow>), Error> {
    let trials = space.trials();
    // Every trial is checked before the sweep's directory exists.
    trial_configs(config, &trials, &config.run.output_dir)?;
    let dir = run_dir::create(
        &config.run.output_dir,
        &format!("{}-sweep", config.run.name),
    )?;
    let path = dir.join("config.toml");
    write_atomic(&path, to_toml(config).as_bytes()).map_err(|e| Error::io(&path, e))?;
    let plan = SearchPlan {
        monitor: space.monitor.clone(),
        mode: space.mode,
        trials,
    };
    write_plan(&dir, &Plan::search(plan.clone()))?;
    run_trials(&dir, config, &plan, observer)
}

/// Trains the plan's trials that have not finished, and writes the ranking.
pub fn run_trials(
    dir: &Path,
    config: &RunConfig,
    plan: &SearchPlan,
    mut observer: impl FnMut(usize, usize) -> Box<dyn Observer>,
) -> Result<(PathBuf, Vec<TrialRow>), Error> {
    let configs = trial_configs(config, &plan.trials, dir)?;
    let n = configs.len();
    let mut rows = Vec::with_capacity(n);
    for (trial, cfg) in plan.trials.iter().zip(configs) {
        let run_dir = dir.join(trial.name());
        let mut observer = observer(trial.number, n);
        let outcome = match finished(&run_dir, cfg.train.epochs) {
            Some(summary) => {
                observer.message(&format!("finished before: {}", run_dir.display()));
                Ok(summary)
            }
            None => {
                let trainer = Trainer::new(cfg).observer(observer);
                match Checkpoint::latest(&run_dir) {
                    Ok(_) => trainer.resume(&run_dir).run(),
                    Err(_) => trainer.run(),
                }
            }
        };
        rows.push(row(trial, &run_dir, outcome, &plan.monitor));
    }
    rank(&mut rows, plan.mode);
    write_results(dir, plan, &rows)?;
    Ok((dir.to_path_buf(), rows))
}

/// A trial's row: its summary's figures, or what stopped it.
fn row(
    trial: &Trial,
    run_dir: &Path,
    outcome: Result<RunSummary, Error>,
    monitor: &str,
) -> TrialRow {
    // A run that fails still writes its summary, with its memory figures, when it got as far
    // as its run directory.
    let (summary, reason) = match outcome {
        Ok(summary) => (Some(summary), None),
        Err(e) => (read_summary(run_dir), Some(e.to_string())),
    };
    let completed = summary
        .as_ref()
        .is_some_and(|s| s.status == RunStatus::Completed);
    TrialRow {
        rank: None,
        trial: trial.number,
        name: trial.name(),
        values: trial
            .values
            .iter()
            .map(|(k, v)| (k.clone(), literal(v)))
            .collect(),
        status: if completed { "completed" } else { "failed" }.into(),
        reason: reason.filter(|_| !completed),
        monitored: summary
            .as_ref()
            .filter(|_| completed)
            .and_then(|s| monitored(s, monitor)),
        memory: summary.map(|s| SweepRow::of(trial.number, s)),
    }
}

fn read_summary(run_dir: &Path) -> Option<RunSummary> {
    let bytes = std::fs::read(run_dir.join("summary.json")).ok()?;
    serde_json::from_slice(&bytes).ok()
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
    let json = serde_json::json!({
        "monitor": plan.monitor,
        "mode": plan.mode,
        "best": best.map(|r| r.name.clone()),
        "best_config": best.map(|r| dir.join(&r.name).join("config.toml")),
        "trials": rows,
    });
    let path = dir.join("sweep.json");
    let bytes = serde_json::to_vec_pretty(&json).expect("rows serialise");
    write_atomic(&path, &bytes).map_err(|e| Error::io(&path, e))?;
    let path = dir.join("sweep.md");
    let text = ranking(rows, &plan.monitor, plan.mode, dir);
    write_atomic(&path, text.as_bytes()).map_err(|e| Error::io(&path, e))
}
