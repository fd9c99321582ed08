//! `[train.early_stopping]`.

use super::super::{choice, finite_in, non_negative, Invalid, Result};
use crate::config::defaults;
use crate::config::raw::RawEarlyStopping;
use crate::config::types::{EarlyStoppingConfig, Monitor, MonitorMode};

pub(super) fn early_stopping(raw: RawEarlyStopping) -> Result<EarlyStoppingConfig> {
    let monitor = raw.monitor.unwrap_or_else(|| defaults::MONITOR.into());
    let natural = Monitor::natural_mode(&monitor)
        .map_err(|m| Invalid::new("train.early_stopping.monitor", m))?;
    let mode = choice(
        "train.early_stopping.mode",
        raw.mode.as_deref(),
        natural,
        &[("min", MonitorMode::Min), ("max", MonitorMode::Max)],
    )?;
    Ok(EarlyStoppingConfig {
        monitor,
        mode,
        patience: non_negative(
            "train.early_stopping.patience",
            raw.patience,
            defaults::PATIENCE as u64,
        )? as usize,
        min_delta: finite_in(
            "train.early_stopping.min_delta",
            raw.min_delta.unwrap_or(defaults::MIN_DELTA),
            0.0,
            f64::MAX,
            "a finite number >= 0",
        )?,
        restore_best: raw.restore_best.unwrap_or(defaults::RESTORE_BEST),
    })
}
