//! Every check a search makes before it writes anything, which `tidemark validate` makes
//! too: each trial's config and monitor, the order, the pruner, and the budget of trials in
//! parallel.

use std::path::Path;

use super::space::{check_order, Space, Trial};
use super::trial_config::checked_trial_config;
use crate::config::{to_toml, ConfigError, Invalid, Monitor, RunConfig};
use crate::error::Error;
use crate::kinds::Kinds;
use crate::task::unknown_monitor;

/// Every check a search makes before it writes anything (`tidemark validate` makes them
/// too): each trial's config, the order, the pruner, and the budget of trials in parallel.
pub fn check_search(kinds: &Kinds, config: &RunConfig, space: &Space) -> Result<(), Error> {
    let trials = space.trials();
    check_trials(
        kinds,
        &to_toml(&config.unresolved()),
        &trials,
        &config.run.output_dir,
        space.monitor.name(),
    )?;
    check_order(space.order, space.packing.parallel, "--parallel")?;
    check_prune(space, config)?;
    check_pbt(space, config)?;
    if space.packing.parallel > 1 {
        super::sizing::budget::resolve(&space.packing, config)?;
        // The program the children run, known before anything is written.
        super::parallel::trials::trial_exe()?;
    }
    Ok(())
}

/// Refuses a pruner that could prune nothing (its first rung at or past the last epoch), or
/// trials that vary `train.epochs` (rungs are epochs of one length of run).
fn check_prune(space: &Space, config: &RunConfig) -> Result<(), ConfigError> {
    let Some(prune) = space.prune else {
        return Ok(());
    };
    let fail = |key: String, message: String| ConfigError {
        origin: "[sweep.prune]".into(),
        message: format!("{key}: {message}"),
        key: Some(key),
    };
    if space.vary.iter().any(|(key, _)| key == "train.epochs") {
        return Err(fail(
            "sweep.vary.train.epochs".into(),
            "a pruned search compares trials at the same epochs, so its trials share \
             train.epochs; vary it in another search, or remove [sweep.prune]"
                .into(),
        ));
    }
    prune
        .check_epochs(config.train.epochs)
        .map_err(|Invalid { key, message }| ConfigError {
            origin: "[sweep.prune]".into(),
            key: Some(key),
            message,
        })
}

/// Refuses a population whose interval leaves no decision before the last epoch (its members
/// would train as independent trials).
fn check_pbt(space: &Space, config: &RunConfig) -> Result<(), ConfigError> {
    let Some(pbt) = &space.pbt else {
        return Ok(());
    };
    let epochs = config.train.epochs;
    match pbt.intervals(epochs).is_empty() {
        false => Ok(()),
        true => Err(ConfigError {
            origin: "[sweep.pbt]".into(),
            key: Some("sweep.pbt.interval".into()),
            message: format!(
                "sweep.pbt.interval: {} epochs leave no interval before train.epochs = {epochs} \
                 ends the members: none would copy another; make it smaller than train.epochs",
                pbt.interval
            ),
        }),
    }
}

/// Checks every trial's config, and that its task reports `monitor`, building one config at
/// a time.
pub(super) fn check_trials(
    kinds: &Kinds,
    base: &str,
    trials: &[Trial],
    dir: &Path,
    monitor: &str,
) -> Result<(), Error> {
    trials.iter().try_for_each(|trial| {
        let config = checked_trial_config(base, trial, dir, &|c| kinds.resolve(c))?;
        check_monitor(kinds, monitor, &config)
    })
}

/// Refuses a `sweep.monitor` that a trial's task does not report: every trial would train, and
/// none would have a value to rank by.
fn check_monitor(kinds: &Kinds, monitor: &str, config: &RunConfig) -> Result<(), Error> {
    let metrics = kinds.metric_names(config)?;
    let reported = Monitor::figures(&metrics.iter().map(String::as_str).collect::<Vec<_>>());
    match reported.contains(&monitor.to_string()) {
        true => Ok(()),
        false => Err(Error::Config(ConfigError {
            origin: "[sweep]".into(),
            key: Some("sweep.monitor".into()),
            message: unknown_monitor("sweep.monitor", monitor, &reported),
        })),
    }
}
