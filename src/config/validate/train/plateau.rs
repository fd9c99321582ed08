//! `[train.schedule] kind = "plateau"`'s keys beyond their types: the monitor is a validation
//! figure (default: early stopping's, else `val_loss`), `factor` in (0, 1), `min_delta` a
//! finite number >= 0; each key left out is written in at its default (Keras's).

use super::super::{finite_in, monitor_of, Invalid, Result};
use crate::config::types::{EarlyStoppingConfig, ScheduleConfig};
use crate::config::Number;

pub(super) fn plateau(
    schedule: ScheduleConfig,
    early: Option<&EarlyStoppingConfig>,
) -> Result<ScheduleConfig> {
    let (monitor, mode) = monitor_of(
        "train.schedule.monitor",
        schedule.monitor,
        schedule.mode,
        early,
    )?;
    let schedule = ScheduleConfig {
        monitor,
        mode,
        ..schedule
    };
    let plateau = schedule.plateau().expect("a plateau schedule");
    let factor = plateau.factor;
    if !(factor.is_finite() && factor > 0.0 && factor < 1.0) {
        return Err(Invalid::new(
            "train.schedule.factor",
            format_args!(
                "must be in (0, 1): the rate is multiplied by it; got {}",
                Number(factor)
            ),
        ));
    }
    finite_in(
        "train.schedule.min_delta",
        plateau.min_delta,
        0.0,
        f64::MAX,
        "a finite number >= 0",
    )?;
    Ok(ScheduleConfig {
        factor: Some(plateau.factor),
        patience: Some(plateau.patience),
        min_delta: Some(plateau.min_delta),
        cooldown: Some(plateau.cooldown),
        ..schedule
    })
}
