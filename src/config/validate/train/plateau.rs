//! `[train.schedule] kind = "plateau"`'s keys: `monitor` (default: early stopping's, else
//! `val_loss`), `mode`, `factor` (0.1), `patience` (10), `min_delta` (1e-4) and `cooldown` (0),
//! Keras's defaults.

use super::super::{choice, finite_in, non_negative, Invalid, Result};
use crate::config::defaults;
use crate::config::raw::RawSchedule;
use crate::config::types::{EarlyStoppingConfig, Monitor, MonitorMode, PlateauConfig};
use crate::config::Number;

pub(super) fn plateau(
    raw: &RawSchedule,
    early: Option<&EarlyStoppingConfig>,
) -> Result<PlateauConfig> {
    let (monitor, natural) = match (&raw.monitor, early) {
        (Some(monitor), _) => {
            let natural = Monitor::natural_mode(monitor)
                .map_err(|m| Invalid::new("train.schedule.monitor", m))?;
            (monitor.clone(), natural)
        }
        (None, Some(early)) => (early.monitor.clone(), early.mode()),
        (None, None) => (defaults::MONITOR.to_string(), MonitorMode::Min),
    };
    let mode = choice(
        "train.schedule.mode",
        raw.mode.as_deref(),
        natural,
        &[("min", MonitorMode::Min), ("max", MonitorMode::Max)],
    )?;
    let factor = raw.factor.unwrap_or(defaults::PLATEAU_FACTOR);
    if !(factor.is_finite() && factor > 0.0 && factor < 1.0) {
        return Err(Invalid::new(
            "train.schedule.factor",
            format_args!(
                "must be in (0, 1): the rate is multiplied by it; got {}",
                Number(factor)
            ),
        ));
    }
    Ok(PlateauConfig {
        monitor,
        mode,
        factor,
        patience: non_negative(
            "train.schedule.patience",
            raw.patience,
            defaults::PLATEAU_PATIENCE as u64,
        )? as usize,
        min_delta: finite_in(
            "train.schedule.min_delta",
            raw.min_delta.unwrap_or(defaults::PLATEAU_MIN_DELTA),
            0.0,
            f64::MAX,
            "a finite number >= 0",
        )?,
        cooldown: non_negative(
            "train.schedule.cooldown",
            raw.cooldown,
            defaults::PLATEAU_COOLDOWN as u64,
        )? as usize,
    })
}
