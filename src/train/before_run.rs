//! What a run checks and says before its run directory exists: a precision its device or its
//! task's model cannot compute in, an early-stopping monitor its task does not report, a
//! warmup longer than the run; and the lines about how it computes, for the terminal.

use super::hand::steps_per_epoch;
use super::precision;
use crate::config::{
    Backend, ConfigError, Execution, LossScaling, Precision, RunConfig, TrainConfig,
};
use crate::error::Error;
use crate::task::{unknown_monitor, Task};

/// Lines about how this run computes, for the terminal.
pub(super) fn notes(config: &RunConfig) -> Vec<String> {
    let mut notes = Vec::new();
    if config.device.backend == Backend::Flex {
        notes.push(
            "memory: flex has no device pools; figures are host heap bytes counted by \
             tidemark's allocator (reserved = the process's anonymous resident memory)"
                .to_string(),
        );
        if config.device.execution == Some(Execution::Fused) {
            notes.push(
                "execution: flex has no fused mode (kernel fusion exists for the CubeCL \
                 backends); this run executes eagerly, as \"eager\" would"
                    .to_string(),
            );
        }
    }
    let train = &config.train;
    if train.precision != Precision::F32 {
        notes.push(format!(
            "precision: {} compute, f32 weights and optimizer state{}",
            train.precision,
            match train.loss_scaling() {
                LossScaling::Dynamic => {
                    format!(", dynamic loss scaling from {}", train.initial_loss_scale)
                }
                LossScaling::Off => String::new(),
            }
        ));
    }
    notes
}

/// Every check a run of `task` under `config` on `device` makes before its run directory
/// exists.
pub(super) fn check_before_run<T: Task>(
    config: &RunConfig,
    device: &burn::tensor::Device,
    task: &T,
) -> Result<(), Error> {
    check_precision(config, device, task)?;
    if let Some(early) = &config.train.early_stopping {
        let table = ("[train.early_stopping]", "train.early_stopping.monitor");
        check_monitor(table, &early.monitor, task.metric_names())?;
    }
    if let Some(plateau) = config.train.schedule.as_ref().and_then(|s| s.plateau()) {
        let table = ("[train.schedule]", "train.schedule.monitor");
        check_monitor(table, &plateau.monitor, task.metric_names())?;
    }
    if let Some(keep) = &config.checkpoint.kept_best() {
        let table = ("[checkpoint]", "checkpoint.monitor");
        check_monitor(table, &keep.monitor, task.metric_names())?;
    }
    check_warmup(&config.train, task)
}

/// Refuses a `train.precision` that `device` does not have, or that `task`'s model cannot
/// compute in, before anything runs.
pub(super) fn check_precision<T: Task>(
    config: &RunConfig,
    device: &burn::tensor::Device,
    task: &T,
) -> Result<(), Error> {
    let precision = config.train.precision;
    if !precision::supported(device, precision) {
        return Err(unsupported_precision(config, device));
    }
    match task.half_precision_unsupported() {
        Some(why) if precision != Precision::F32 => Err(Error::Config(ConfigError {
            origin: "[train]".into(),
            key: Some("train.precision".into()),
            message: format!(
                "train.precision = \"{precision}\" is not supported by this task's model: \
                 {why}; use \"f32\""
            ),
        })),
        _ => Ok(()),
    }
}

/// Refuses a `monitor` (config `key` in `table`) the task does not report, before the run
/// directory exists, where the task says what it reports; otherwise the first epoch's figures
/// are the check.
fn check_monitor(
    (table, key): (&str, &str),
    monitor: &str,
    metrics: Option<&'static [&'static str]>,
) -> Result<(), Error> {
    let Some(metrics) = metrics else {
        return Ok(());
    };
    let reported = crate::config::Monitor::figures(metrics);
    if reported.iter().any(|r| r == monitor) {
        return Ok(());
    }
    Err(Error::Config(ConfigError {
        origin: table.into(),
        key: Some(key.into()),
        message: unknown_monitor(key, monitor, &reported),
    }))
}

/// Refuses a warmup longer than the run: it would train every step below the configured rate
/// (10,000 steps of warmup on a run of 45 train it all at about `lr / 2000`), without a word.
/// Before the run directory exists.
fn check_warmup<T: Task>(train: &TrainConfig, task: &T) -> Result<(), Error> {
    let Some(schedule) = train.schedule.as_ref().filter(|s| s.warmup_steps > 0) else {
        return Ok(());
    };
    // The run's length needs the training split's; only a schedule with a warmup asks.
    let total_steps = steps_per_epoch(train, task.data().train.len()) * train.epochs;
    if schedule.warmup_steps <= total_steps {
        return Ok(());
    }
    Err(Error::Config(ConfigError {
        origin: "[train.schedule]".into(),
        key: Some("train.schedule.warmup_steps".into()),
        message: format!(
            "train.schedule.warmup_steps = {} is longer than the run, {total_steps} optimizer \
             steps (train.epochs times the steps of an epoch): the rate would never reach \
             train.lr; use at most {total_steps}",
            schedule.warmup_steps
        ),
    }))
}

fn unsupported_precision(config: &RunConfig, device: &burn::tensor::Device) -> Error {
    let precision = config.train.precision;
    Error::Config(ConfigError {
        origin: "[train]".into(),
        key: Some("train.precision".into()),
        message: format!(
            "train.precision = \"{precision}\" is not supported by the {} device; use \
             \"f32\"{}",
            config.device.backend,
            [Precision::Bf16, Precision::F16]
                .into_iter()
                .filter(|&p| p != precision && precision::supported(device, p))
                .map(|p| format!(" or \"{p}\""))
                .collect::<String>()
        ),
    })
}
