//! `sweep --resume`: a sweep of runs or a search continued where it stopped.

use std::path::{Path, PathBuf};

use super::plan::{read_plan, write_plan, Plan};
use super::results::{SweepRow, TrialRow};
use super::resume_set::Changes;
use super::runs::run_all;
use super::study::rejoin_alone;
use crate::config::TASK_SECTIONS;
use crate::config::{ConfigError, RunConfig};
use crate::error::{Error, UsageError};
use crate::kinds::Kinds;
use crate::record::Observer;
use crate::train::resume::check_config;

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

/// Refuses a worker's directory of a shared study: its trials are the study's to hand out, so
/// the worker rejoins the study instead (which resumes its stopped trials from their
/// checkpoints).
fn refuse_a_study(dir: &Path) -> Result<(), Error> {
    let path = dir.join("study.json");
    let Some(study) = crate::record::read_json::<serde_json::Value>(&path, "a study's storage")?
    else {
        return Ok(());
    };
    let storage = study["storage"].as_str().unwrap_or("its storage");
    Err(Error::Usage(UsageError::new(
        format!("--resume {}", dir.display()),
        format!(
            "a worker's directory of the study in {storage}; rejoin it with `tidemark sweep \
             --config {} --storage {storage}` (a trial this worker left goes on from its \
             checkpoint)",
            dir.join("config.toml").display()
        ),
    )))
}

/// Refuses a population resumed with another `train.epochs` than the search's `config.toml`
/// in `dir`: its intervals, and the decisions at them, were made for that many.
fn keeps_its_epochs(dir: &Path, config: &RunConfig) -> Result<(), Error> {
    let path = dir.join("config.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let table: toml::Table = toml::from_str(&text).unwrap_or_default();
    let saved =
        (table.get("train").and_then(|t| t.get("epochs"))).and_then(toml::Value::as_integer);
    match saved {
        Some(saved) if saved != config.train.epochs as i64 => Err(Error::Config(ConfigError {
            origin: format!("--resume {}", dir.display()),
            key: Some("train.epochs".into()),
            message: format!(
                "train.epochs is {saved} in the search's config.toml but {} here: a \
                 population's intervals and its decisions at them were made for {saved} \
                 epochs; resume it as it was, or start a new search",
                config.train.epochs
            ),
        })),
        _ => Ok(()),
    }
}

/// Continues the sweep in `dir` at the first run that did not finish: completed runs are kept
/// (their rows come from their `summary.json`), a run that stopped resumes from its latest
/// checkpoint, and the rest start. `config` must match the sweep's `config.toml` except in
/// the keys a resumed run may change; `runs`, if given, replaces the planned count, and
/// `changes` a search's trials at once and their budget ([`Changes`]).
pub fn resume_sweep(
    kinds: &Kinds,
    dir: &Path,
    config: &RunConfig,
    runs: Option<usize>,
    changes: Changes,
    mut observer: impl FnMut(usize, usize) -> Box<dyn Observer>,
) -> Result<(PathBuf, Swept), Error> {
    let config = &kinds.resolved(config)?;
    check_config(
        dir,
        config,
        TASK_SECTIONS,
        Some(&|m| kinds.resolve_model(m)),
        false,
    )?;
    refuse_a_study(dir)?;
    let plan = read_plan(dir)?;
    if let Some(mut search) = plan.search {
        for line in changes.apply(&mut search.packing) {
            observer(0, search.trials.len()).message(&line);
        }
        super::space::check_order(search.order, search.packing.parallel, "--parallel")?;
        if runs.is_some() {
            return Err(Error::Usage(UsageError::new(
                format!("--resume {}", dir.display()),
                "--runs repeats one config; this sweep is a search, whose trials \
                          come from its [sweep] table",
            )));
        }
        // The search its plan keeps, as --set changed its packing.
        let Some(mut space) = search.space() else {
            return Err(Error::Usage(UsageError::new(
                format!("--resume {}", dir.display()),
                "a search planned by an earlier tidemark, whose plan.json does not keep \
                          its method and seed; start it again",
            )));
        };
        space.packing = search.packing;
        if space.pbt.is_some() {
            keeps_its_epochs(dir, config)?;
        }
        let rows = rejoin_alone(kinds, config, &space, dir, observer)?;
        let dir = dir.to_path_buf();
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
        return Err(Error::Usage(UsageError::new(
            format!("--resume {}", dir.display()),
            format!(
                "{} is a sweep of runs, and only a search's trials run in parallel (under \
                 sweep.parallel and sweep.budget)",
                dir.display()
            ),
        )));
    }
    let runs = runs.unwrap_or(plan.runs);
    if runs != plan.runs {
        write_plan(dir, &Plan { runs, search: None })?;
    }
    let (dir, rows) = run_all(kinds, dir, config, runs, observer)?;
    Ok((dir, Swept::Runs(rows)))
}
