//! One trial of a parallel search, in the child process that runs it (`tidemark trial DIR N
//! --limit BYTES`): the trial's config from the sweep directory's `config.toml` and
//! `plan.json`, with its lease as `memory.limit`, trained (or resumed from its latest
//! checkpoint) in its own `trial-NNN/`.

use std::path::Path;

use super::search::{set, trial_config};
use super::{read_plan, train_or_resume};
use crate::config::{to_toml, ConfigError};
use crate::error::Error;
use crate::record::{Observer, RunSummary};

/// Trains trial `number` of the search in `dir` under `memory.limit = limit` bytes, with
/// `memory.on_limit = "fit"` if `fit`.
pub fn run_child(
    dir: &Path,
    number: usize,
    limit: u64,
    fit: bool,
    observer: Box<dyn Observer>,
) -> Result<RunSummary, Error> {
    let base = crate::config::load(&dir.join("config.toml"), &[])?;
    let plan = read_plan(dir)?.search.ok_or_else(|| not_a_search(dir))?;
    let trial = plan
        .trials
        .iter()
        .find(|t| t.number == number)
        .ok_or_else(|| {
            Error::Config(ConfigError {
                origin: dir.join("plan.json").display().to_string(),
                key: None,
                message: format!("has no trial {number} (it plans {})", plan.trials.len()),
            })
        })?;
    let mut extra = vec![set("memory.limit", toml::Value::Integer(limit as i64))];
    if fit {
        extra.push(set("memory.on_limit", toml::Value::String("fit".into())));
    }
    let cfg = trial_config(&to_toml(&base), trial, dir, extra)?;
    train_or_resume(cfg, &dir.join(trial.name()), observer)
}

fn not_a_search(dir: &Path) -> Error {
    Error::Config(ConfigError {
        origin: dir.display().to_string(),
        key: None,
        message: "a sweep of runs, not a search: only a search's trials run as children".into(),
    })
}
