//! `[train.schedule]`: the kind, and the keys each kind takes.

use super::super::{choice, misplaced, non_negative, positive, present, Invalid, Result};
use super::plateau::plateau;
use crate::config::defaults;
use crate::config::raw::RawSchedule;
use crate::config::types::{EarlyStoppingConfig, ScheduleConfig, ScheduleKind};
use crate::config::Number;

/// Which kinds take each key (`warmup_steps` goes with every kind).
const KEYS: &[(&str, &[&str])] = &[
    (
        "min_lr",
        &["linear", "cosine", "step", "exponential", "plateau"],
    ),
    ("decay_steps", &["linear", "cosine"]),
    ("step_size", &["step"]),
    ("gamma", &["step", "exponential"]),
    ("monitor", &["plateau"]),
    ("mode", &["plateau"]),
    ("factor", &["plateau"]),
    ("patience", &["plateau"]),
    ("min_delta", &["plateau"]),
    ("cooldown", &["plateau"]),
    ("milestones", &["piecewise"]),
    ("factors", &["piecewise"]),
];

pub(super) fn schedule(
    raw: RawSchedule,
    lr: f64,
    early: Option<&EarlyStoppingConfig>,
) -> Result<ScheduleConfig> {
    let kind = kind(&raw)?;
    let plateau = match kind {
        ScheduleKind::Plateau => Some(plateau(&raw, early)?),
        _ => None,
    };
    let warmup_steps = non_negative(
        "train.schedule.warmup_steps",
        raw.warmup_steps,
        defaults::WARMUP_STEPS as u64,
    )? as usize;
    check_lr(kind, warmup_steps, lr)?;
    let (milestones, factors) = pieces(kind, &raw, warmup_steps)?;
    Ok(ScheduleConfig {
        milestones,
        factors,
        kind,
        warmup_steps,
        min_lr: min_lr(kind, raw.min_lr, lr)?,
        decay_steps: raw
            .decay_steps
            .map(|n| positive("train.schedule.decay_steps", Some(n), 1))
            .transpose()?,
        step_size: step_size(kind, raw.step_size)?,
        gamma: gamma(kind, raw.gamma)?,
        plateau,
    })
}

/// The kind, with every key present checked against it.
fn kind(raw: &RawSchedule) -> Result<ScheduleKind> {
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
            ("plateau", ScheduleKind::Plateau),
            ("piecewise", ScheduleKind::Piecewise),
        ],
    )?;
    let present = present(&[
        ("min_lr", raw.min_lr.is_some()),
        ("decay_steps", raw.decay_steps.is_some()),
        ("step_size", raw.step_size.is_some()),
        ("gamma", raw.gamma.is_some()),
        ("monitor", raw.monitor.is_some()),
        ("mode", raw.mode.is_some()),
        ("factor", raw.factor.is_some()),
        ("patience", raw.patience.is_some()),
        ("min_delta", raw.min_delta.is_some()),
        ("cooldown", raw.cooldown.is_some()),
        ("milestones", raw.milestones.is_some()),
        ("factors", raw.factors.is_some()),
    ]);
    misplaced("train.schedule", KEYS, &present, kind.name())?;
    Ok(kind)
}

/// Burn's linear, cosine and exponential schedulers (and the linear warmup) take a learning
/// rate in (0, 1].
fn check_lr(kind: ScheduleKind, warmup_steps: usize, lr: f64) -> Result<()> {
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
                 got {}",
                kind.name(),
                Number(lr)
            ),
        ));
    }
    Ok(())
}

/// Where a decay ends (`linear`, `cosine`: default 0) or its floor (`step`, `exponential`).
fn min_lr(kind: ScheduleKind, raw: Option<f64>, lr: f64) -> Result<Option<f64>> {
    let min_lr = match kind {
        ScheduleKind::Constant | ScheduleKind::Piecewise => return Ok(None),
        ScheduleKind::Linear | ScheduleKind::Cosine => raw.unwrap_or(defaults::MIN_LR),
        ScheduleKind::Plateau => raw.unwrap_or(defaults::MIN_LR),
        ScheduleKind::Step | ScheduleKind::Exponential => match raw {
            Some(min_lr) => min_lr,
            None => return Ok(None),
        },
    };
    if !(min_lr.is_finite() && (0.0..=lr).contains(&min_lr)) {
        return Err(Invalid::new(
            "train.schedule.min_lr",
            format_args!(
                "must be in [0, train.lr = {}], got {}",
                Number(lr),
                Number(min_lr)
            ),
        ));
    }
    Ok(Some(min_lr))
}

/// `piecewise`'s milestones and factors.
type Pieces = (Option<Vec<usize>>, Option<Vec<f64>>);

/// `piecewise`'s milestones (epochs, increasing, above 0) and a factor for each (above 0);
/// without a warmup, whose steps would move them.
fn pieces(kind: ScheduleKind, raw: &RawSchedule, warmup_steps: usize) -> Result<Pieces> {
    if kind != ScheduleKind::Piecewise {
        return Ok((None, None));
    }
    let required = |key: &str| {
        Invalid::new(
            key,
            "is required with kind = \"piecewise\": the epochs after which the rate changes \
             (milestones) and the factor of train.lr from each on (factors)",
        )
    };
    let milestones = raw
        .milestones
        .as_ref()
        .ok_or_else(|| required("train.schedule.milestones"))?;
    let factors = raw
        .factors
        .as_ref()
        .ok_or_else(|| required("train.schedule.factors"))?;
    let key = "train.schedule.milestones";
    if milestones.is_empty() || milestones.windows(2).any(|w| w[1] <= w[0]) || milestones[0] <= 0 {
        let message =
            format_args!("must be epochs above 0, increasing, at least one; got {milestones:?}");
        return Err(Invalid::new(key, message));
    }
    if factors.len() != milestones.len() {
        let message = format_args!(
            "must be one factor for each of the {} milestones, got {}",
            milestones.len(),
            factors.len()
        );
        return Err(Invalid::new("train.schedule.factors", message));
    }
    if let Some(f) = factors.iter().find(|f| !(f.is_finite() && **f > 0.0)) {
        let message = format_args!("must be numbers > 0, got {}", Number(*f));
        return Err(Invalid::new("train.schedule.factors", message));
    }
    if warmup_steps > 0 {
        return Err(Invalid::new(
            "train.schedule.warmup_steps",
            "does not go with kind = \"piecewise\", whose milestones count epochs from the \
             run's start: write the warmup's rate as a first piece",
        ));
    }
    let milestones = milestones.iter().map(|&m| m as usize).collect();
    Ok((Some(milestones), Some(factors.clone())))
}

/// `step`'s steps between two decays: required.
fn step_size(kind: ScheduleKind, raw: Option<i64>) -> Result<Option<usize>> {
    match (kind, raw) {
        (ScheduleKind::Step, None) => Err(Invalid::new(
            "train.schedule.step_size",
            "is required with kind = \"step\": the optimizer steps between two decays",
        )),
        (ScheduleKind::Step, some) => Ok(Some(positive("train.schedule.step_size", some, 1)?)),
        _ => Ok(None),
    }
}

/// The decay factor: `step`'s (default 0.1) and `exponential`'s (required), in (0, 1].
fn gamma(kind: ScheduleKind, raw: Option<f64>) -> Result<Option<f64>> {
    let gamma = match (kind, raw) {
        (ScheduleKind::Step, raw) => raw.unwrap_or(defaults::STEP_GAMMA),
        (ScheduleKind::Exponential, Some(gamma)) => gamma,
        (ScheduleKind::Exponential, None) => {
            return Err(Invalid::new(
                "train.schedule.gamma",
                "is required with kind = \"exponential\": the factor the lr is multiplied by \
                 every step",
            ))
        }
        _ => return Ok(None),
    };
    if !(gamma.is_finite() && gamma > 0.0 && gamma <= 1.0) {
        return Err(Invalid::new(
            "train.schedule.gamma",
            format_args!("must be in (0, 1], got {}", Number(gamma)),
        ));
    }
    Ok(Some(gamma))
}
