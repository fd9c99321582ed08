//! Raw -> validated, one file per section. Defaults live in [`defaults`](super::defaults).

mod checkpoint;
mod data;
mod memory;
mod train;
mod unresolved;

use super::defaults;
use super::raw::RawConfig;
use super::types::*;
use super::Number;

/// A key whose value failed validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// Dotted key, e.g. `train.batch_size`.
    pub key: String,
    /// What is wrong, starting with the key: `train.batch_size must be > 0, got 0`.
    pub message: String,
}

impl Invalid {
    /// `key`'s error: `message` after the key's name.
    pub fn new(key: &str, message: impl std::fmt::Display) -> Self {
        Self {
            key: key.to_string(),
            message: format!("{key} {message}"),
        }
    }
}

pub(super) type Result<T> = std::result::Result<T, Invalid>;

pub(super) fn finite_in(key: &str, value: f64, lo: f64, hi: f64, what: &str) -> Result<f64> {
    if value.is_finite() && value >= lo && value < hi {
        Ok(value)
    } else {
        Err(Invalid::new(
            key,
            format_args!("must be {what}, got {}", Number(value)),
        ))
    }
}

/// [`counts_in_a_file`], each set count above 0 too (as `serde_checks` reads a file's).
pub(super) fn positive_counts_in_a_file(counts: &[(&str, Option<usize>)]) -> Result<()> {
    if let Some((key, _)) = counts.iter().find(|(_, count)| *count == Some(0)) {
        return Err(Invalid::new(key, "must be > 0, got 0"));
    }
    counts_in_a_file(counts)
}

/// The figure a table watches without a monitor of its own (a plateau's, the best
/// checkpoints'), with its way: early stopping's, where the run has it, else `val_loss`.
pub(super) fn watched(early: Option<&EarlyStoppingConfig>) -> (String, MonitorMode) {
    match early {
        Some(early) => (early.monitor.clone(), early.mode()),
        None => {
            let natural = Monitor::natural_mode(Monitor::VAL_LOSS).expect("val_loss is a figure");
            (Monitor::VAL_LOSS.to_string(), natural)
        }
    }
}

/// A table's `monitor` and `mode` as validation writes them in: its own figure (checked, at
/// `key`) with that figure's way, else [`watched`]'s; `mode` where it is given.
pub(super) fn monitor_of(
    key: &str,
    monitor: Option<String>,
    mode: Option<MonitorMode>,
    early: Option<&EarlyStoppingConfig>,
) -> Result<(Option<String>, Option<MonitorMode>)> {
    let (monitor, natural) = match monitor {
        Some(monitor) => {
            let natural = Monitor::natural_mode(&monitor).map_err(|m| Invalid::new(key, m))?;
            (monitor, natural)
        }
        None => watched(early),
    };
    Ok((Some(monitor), Some(mode.unwrap_or(natural))))
}

/// An error for the first key in `present` that `table` does not list for `kind` (of
/// `section`): `model.pool only applies with model.kind = "cnn"`.
pub(super) fn misplaced(
    section: &str,
    table: &[(&str, &[&str])],
    present: &[&'static str],
    kind: &str,
) -> Result<()> {
    misplaced_by(section, &format!("{section}.kind"), table, present, kind)
}

/// As [`misplaced`], with the kind chosen by `selector` (`train.optimizer`).
pub(super) fn misplaced_by(
    section: &str,
    selector: &str,
    table: &[(&str, &[&str])],
    present: &[&'static str],
    kind: &str,
) -> Result<()> {
    for key in present {
        let (_, kinds) = table
            .iter()
            .find(|(k, _)| k == key)
            .expect("every present key is listed");
        if !kinds.contains(&kind) {
            let with: Vec<String> = kinds.iter().map(|k| format!("\"{k}\"")).collect();
            return Err(Invalid::new(
                &format!("{section}.{key}"),
                format_args!("only applies with {selector} = {}", with.join(" or ")),
            ));
        }
    }
    Ok(())
}

/// The keys of `table` (each with the kinds that take it) that `value` sets, in `table`'s
/// order: those its serde type writes, an unset key (`None`) being one it leaves out.
pub(super) fn set_keys<T: serde::Serialize>(
    value: &T,
    table: &[(&'static str, &[&str])],
) -> Vec<&'static str> {
    // A table of named keys always serializes (a number JSON cannot hold becomes null).
    let written = serde_json::to_value(value).expect("a config table serializes");
    (table.iter().map(|(key, _)| *key))
        .filter(|key| written.get(*key).is_some())
        .collect()
}

pub(super) fn choice<T: Copy>(
    key: &str,
    value: Option<&str>,
    default: T,
    options: &[(&str, T)],
) -> Result<T> {
    let Some(value) = value else {
        return Ok(default);
    };
    options
        .iter()
        .find(|(name, _)| *name == value)
        .map(|(_, v)| *v)
        .ok_or_else(|| {
            let names: Vec<String> = options.iter().map(|(n, _)| format!("\"{n}\"")).collect();
            Invalid::new(
                key,
                format_args!("must be one of {}, got \"{value}\"", names.join(", ")),
            )
        })
}

/// `[run]` beyond its types: the name is a directory's; and what the file's types hold of a
/// value set in code (`ConfigBuilder`): a seed a config file can hold, a count above 0.
fn run(run: RunSection) -> Result<RunSection> {
    let name = &run.name;
    if name.is_empty() || name.contains(['/', '\\']) || name == "." || name == ".." {
        return Err(Invalid::new(
            "run.name",
            format_args!("must be a non-empty directory name without slashes, got \"{name}\""),
        ));
    }
    in_a_file("run.seed", run.seed)?;
    if run.log_every_steps == Some(0) {
        return Err(Invalid::new("run.log_every_steps", "must be > 0, got 0"));
    }
    Ok(run)
}

/// `[device]` beyond its types: an index a config file can hold.
fn device(device: DeviceConfig) -> Result<DeviceConfig> {
    in_a_file("device.index", device.index as u64)?;
    Ok(device)
}

/// `value` of `key` is one a config file (TOML's integers, signed 64-bit) can hold: a
/// validated config is written as one (`config.toml`).
pub(in crate::config) fn in_a_file(key: &str, value: u64) -> Result<()> {
    match i64::try_from(value) {
        Ok(_) => Ok(()),
        Err(_) => Err(Invalid::new(
            key,
            format_args!("must be at most {}, got {value}", i64::MAX),
        )),
    }
}

/// [`in_a_file`] for each count of `counts` that is set: a table read as it is takes a count
/// set in code as it is, and only a file's reader checks it as it reads.
pub(super) fn counts_in_a_file(counts: &[(&str, Option<usize>)]) -> Result<()> {
    for &(key, value) in counts {
        if let Some(value) = value {
            in_a_file(key, value as u64)?;
        }
    }
    Ok(())
}

/// Refuses offload to the host on flex, whose tensors are in host memory already.
fn host_has_no_offload(device: &DeviceConfig, train: &TrainConfig) -> Result<()> {
    if device.backend != Backend::Flex {
        return Ok(());
    }
    let keys = [
        ("train.offload.gradients", train.offload.gradients),
        ("train.offload.optimizer", train.offload.optimizer),
    ];
    match keys.into_iter().find(|(_, place)| *place == Offload::Host) {
        Some((key, _)) => Err(Invalid::new(
            key,
            "= \"host\" has nothing to move on device.backend = \"flex\": its tensors are in \
             host memory already; offload is for a device with memory of its own (wgpu, cuda, \
             cpu)",
        )),
        None if train
            .ema
            .as_ref()
            .is_some_and(|e| e.device == EmaDevice::Host) =>
        {
            Err(Invalid::new(
                "train.ema.device",
                "= \"host\" has nothing to move on device.backend = \"flex\": its tensors are in \
                 host memory already; it is for a device with memory of its own (wgpu, cuda, cpu)",
            ))
        }
        None => Ok(()),
    }
}

impl TryFrom<RawConfig> for RunConfig {
    type Error = Invalid;

    fn try_from(raw: RawConfig) -> Result<Self> {
        let run = run(raw.run)?;
        let device = device(raw.device)?;
        let train = train::train(raw.train)?;
        host_has_no_offload(&device, &train)?;
        let checkpoint = checkpoint::checkpoint(raw.checkpoint, train.early_stopping.as_ref())?;
        Ok(RunConfig {
            run,
            device,
            model: ModelConfig {
                kind: (raw.model.kind).unwrap_or_else(|| defaults::MODEL_KIND.into()),
                settings: raw.model.settings,
            },
            data: data::data(raw.data)?,
            train,
            memory: memory::memory(raw.memory)?,
            checkpoint,
        })
    }
}

#[cfg(test)]
mod tests;
