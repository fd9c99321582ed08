//! `sweep --resume`: a search (a sweep of runs among them) continued where it stopped.

use std::path::{Path, PathBuf};

use super::plan::read_plan;
use super::results::TrialRow;
use super::resume_set::Changes;
use super::study::{journal_of, recorded, rejoin_alone};
use crate::config::TASK_SECTIONS;
use crate::config::{ConfigError, RunConfig};
use crate::error::{Error, UsageError};
use crate::kinds::Kinds;
use crate::record::Observer;
use crate::train::resume::check_config;

/// What a sweep finished with.
pub enum Swept {
    /// Runs of one config (`--runs N`): a search's trials, by number.
    Runs(Vec<TrialRow>),
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

/// Refuses a directory without a journal that is no search's: one with neither a plan nor a
/// trial (`trial-001`), or a sweep of runs made before they were a search (a plan, no journal).
/// A search that lost its journal is [`recorded`]'s to refuse.
fn not_a_search(dir: &Path) -> Result<(), Error> {
    let trials = std::fs::read_dir(dir).into_iter().flatten().flatten();
    let trained = || {
        trials
            .map(|e| e.file_name())
            .any(|n| n.to_string_lossy().starts_with("trial-"))
    };
    let refused = |why: String| {
        Err(Error::Usage(UsageError::new(
            format!("--resume {}", dir.display()),
            why,
        )))
    };
    match dir.join("plan.json").exists() {
        false if !trained() => refused(format!(
            "not a sweep directory: {} is missing",
            dir.join("journal.log").display()
        )),
        true if read_plan(dir)?.search.is_none() => refused(
            "a sweep of runs made by an earlier tidemark, which cannot go on: each run's figures \
             are in its run-N/summary.json; start the sweep again"
                .into(),
        ),
        _ => Ok(()),
    }
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

/// Continues the sweep in `dir` where it stopped, as its study's worker alone
/// ([`rejoin_alone`]): finished trials (runs) are kept, one that stopped resumes from its latest
/// checkpoint, and the rest start. `config` must match the sweep's `config.toml` except in the
/// keys a resumed run may change; `changes` may change a search's trials at once and their
/// budget ([`Changes`]). `runs` is refused: a sweep trains the trials it planned.
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
    let origin = || format!("--resume {}", dir.display());
    if !dir.join("journal.log").exists() {
        not_a_search(dir)?;
    }
    // The search is its journal's (plan.json shows it).
    let mut search = recorded(dir, &journal_of(dir)?, &config.run.name)?;
    if let Some(runs) = runs {
        let why = match search.is_repeat() {
            true => format!(
                "a sweep resumed trains the {} runs it planned, not {runs}; start a new \
                 sweep for more",
                search.trials.len()
            ),
            false => "--runs repeats one config; this sweep is a search, whose trials come \
                      from its [sweep] table"
                .into(),
        };
        return Err(Error::Usage(UsageError::new(origin(), why)));
    }
    if search.is_repeat() && changes != Changes::default() {
        return Err(Error::Usage(UsageError::new(
            origin(),
            "a sweep of runs trains its runs one after another in one process; only a \
             search's trials run in parallel (under sweep.parallel and sweep.budget)",
        )));
    }
    for line in changes.apply(&mut search.packing) {
        observer(0, search.trials.len()).message(&line);
    }
    super::space::check_order(search.order, search.packing.parallel, "--parallel")?;
    // The search its plan keeps, as --set changed its packing.
    let Some(mut space) = search.space() else {
        return Err(Error::Usage(UsageError::new(
            origin(),
            "a search planned by an earlier tidemark, whose plan.json does not keep its method \
             and seed; start it again",
        )));
    };
    space.packing = search.packing;
    if space.pbt.is_some() {
        keeps_its_epochs(dir, config)?;
    }
    let rows = rejoin_alone(kinds, config, &space, dir, observer)?;
    let swept = match search.is_repeat() {
        true => Swept::Runs(rows),
        false => Swept::Search {
            rows,
            monitor: search.monitor,
            mode: search.mode,
        },
    };
    Ok((dir.to_path_buf(), swept))
}
