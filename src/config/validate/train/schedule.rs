//! `[train.schedule]` and `[train.early_stopping]`.

use super::super::{
    choice, finite_in, misplaced, non_negative, positive, present, Invalid, Result,
};
use crate::config::defaults;
use crate::config::raw::{RawEarlyStopping, RawSchedule};
use crate::config::types::{EarlyStoppingConfig, MonitorMode, ScheduleConfig, ScheduleKind};

/// Which kinds take each key (`warmup_steps` goes with every kind).
const KEYS: &[(&str, &[&str])] = &[
    ("min_lr", &["linear", "cosine", "step", "exponential"]),
    ("decay_steps", &["linear", "cosine"]),
    ("step_size", &["step"]),
    ("gamma", &["step", "exponential"]),
];

pub(super) fn schedule(raw: RawSchedule, lr: f64) -> Result<ScheduleConfig> {
    let kind = choice(
        "train.schedule.kind",
        raw.kind.as_deref(),
        defaults::SCHEDULE_KIND,
        &[
            ("constant", ScheduleKind::Constant),
            ("linear", ScheduleKind::Linear),
            ("cosine", ScheduleKind::Cosine),
            ("step", ScheduleKind::Step),
            ("exponential", ScheduleKind::Exponential),
        ],
    )?;
    let present = present(&[
        ("min_lr", raw.min_lr.is_some()),
        ("decay_steps", raw.decay_steps.is_some()),
        ("step_size", raw.step_size.is_some()),
        ("gamma", raw.gamma.is_some()),
    ]);
    misplaced("train.schedule", KEYS, &present, kind.name())?;
    let warmup_steps = non_negative(
        "train.schedule.warmup_steps",
        raw.warmup_steps,
        defaults::WARMUP_STEPS as u64,
    )? as usize;
    // Burn's linear, cosine and exponential schedulers (and the linear warmup) take a learning
    // rate in (0, 1].
    let bounded = warmup_steps > 1
        || matches!(
            kind,
            ScheduleKind::Linear | ScheduleKind::Cosine | ScheduleKind::Exponential
        );
    if bounded && lr > 1.0 {
        return Err(Invalid::new(
            "train.lr",
            format_args!(
                "must be at most 1 with a {} schedule or a warmup (Burn's schedulers' range), \
                 got {lr}",
                kind.name()
            ),
        ));
    }
    let min_lr = match kind {
        ScheduleKind::Constant => None,
        ScheduleKind::Linear | ScheduleKind::Cosine => Some(raw.min_lr.unwrap_or(defaults::MIN_LR)),
        ScheduleKind::Step | ScheduleKind::Exponential => raw.min_lr,
    };
    if let Some(min_lr) = min_lr {
        if !(min_lr.is_finite() && (0.0..=lr).contains(&min_lr)) {
            return Err(Invalid::new(
                "train.schedule.min_lr",
                format_args!("must be in [0, train.lr = {lr}], got {min_lr}"),
            ));
        }
    }
    let step_size = match kind {
        ScheduleKind::Step => match raw.step_size {
            None => {
                return Err(Invalid::new(
                    "train.schedule.step_size",
                    "is required with kind = \"step\": the optimizer steps between two decays",
                ))
            }
            some => Some(positive("train.schedule.step_size", some, 1)?),
        },
        _ => None,
    };
    let gamma =
        match kind {
            ScheduleKind::Step => Some(raw.gamma.unwrap_or(defaults::STEP_GAMMA)),
            ScheduleKind::Exponential => match raw.gamma {
                Some(gamma) => Some(gamma),
                None => return Err(Invalid::new(
                    "train.schedule.gamma",
                    "is required with kind = \"exponential\": the factor the lr is multiplied by \
                     every step",
                )),
            },
            _ => None,
        };
    if let Some(gamma) = gamma {
        if !(gamma.is_finite() && gamma > 0.0 && gamma <= 1.0) {
            return Err(Invalid::new(
                "train.schedule.gamma",
                format_args!("must be in (0, 1], got {gamma}"),
            ));
        }
    }
    let decay_steps = raw
        .decay_steps
        .map(|n| positive("train.schedule.decay_steps", Some(n), 1))
        .transpose()?;
    Ok(ScheduleConfig {
        kind,
        warmup_steps,
        min_lr,
        decay_steps,
        step_size,
        gamma,
    })
}

pub(super) fn early_stopping(raw: RawEarlyStopping) -> Result<EarlyStoppingConfig> {
    let monitor = raw.monitor.unwrap_or_else(|| defaults::MONITOR.into());
    if !monitor.starts_with("val_") || monitor.len() == 4 {
        return Err(Invalid::new(
            "train.early_stopping.monitor",
            format_args!(
                "must name a validation metric, like \"val_loss\" or \"val_accuracy\"; got \
                 \"{monitor}\""
            ),
        ));
    }
    let natural = match monitor.contains("accuracy") {
        true => MonitorMode::Max,
        false => MonitorMode::Min,
    };
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
