//! A trial's config: the search's base config with the trial's values as overrides, named
//! after the trial, in the sweep's directory; an error in it is said as the trial's.

use std::path::Path;

use super::space::{literal, Trial};
use crate::config::{parse_checked, to_toml, Check, ConfigError, Override, RunConfig};
use crate::error::Error;
use crate::kinds::Kinds;

/// What builds a search's trials: each trial's config (built when it is needed and dropped
/// after), and the model kinds that build its task from it.
#[derive(Clone, Copy)]
pub(super) struct TrialBuild<'a> {
    pub kinds: &'a Kinds,
    pub config: &'a dyn Fn(&Trial) -> Result<RunConfig, Error>,
}

impl TrialBuild<'_> {
    /// `trial`'s config.
    pub fn config(&self, trial: &Trial) -> Result<RunConfig, Error> {
        (self.config)(trial)
    }
}

/// Each trial's config: `config` with the trial's values, named after the trial, in `dir`;
/// a default that depends on a varied key is that trial's own ([`RunConfig::unresolved`]).
/// The first trial whose values do not validate is the error, naming the key and the value.
pub fn trial_configs(
    config: &RunConfig,
    trials: &[Trial],
    dir: &Path,
) -> Result<Vec<RunConfig>, ConfigError> {
    let base = to_toml(&config.unresolved());
    trials
        .iter()
        .map(|trial| trial_config(&base, trial, dir))
        .collect()
}

/// One trial's config: the base config's TOML `base` with the trial's values, named after
/// the trial, in `dir`.
pub(super) fn trial_config(
    base: &str,
    trial: &Trial,
    dir: &Path,
) -> Result<RunConfig, ConfigError> {
    checked_trial_config(base, trial, dir, &|_| Ok(()))
}

/// [`trial_config`], then `check` (the model kinds': the trial's values of the kind's keys
/// are the kind's), its error said as the trial's.
pub(super) fn checked_trial_config(
    base: &str,
    trial: &Trial,
    dir: &Path,
    check: Check<'_>,
) -> Result<RunConfig, ConfigError> {
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
    parse_checked(base, "config.toml", &overrides, check).map_err(|e| in_trial(e, trial))
}

/// An override of `key` with `value`, as `--set` would give it.
pub(super) fn set(key: &str, value: toml::Value) -> Override {
    Override {
        key: key.into(),
        text: format!("{key}={value}"),
        value,
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
