//! `[train.schedule]` beyond its types: the keys each kind takes, the ranges, and the keys whose
//! defaults depend on the kind written in. The table's keys are [`ScheduleConfig`]'s.

use super::super::{
    counts_in_a_file, misplaced, positive_counts_in_a_file, set_keys, Invalid, Result,
};
use super::plateau::plateau;
use crate::config::defaults;
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
    schedule: ScheduleConfig,
    lr: f64,
    early: Option<&EarlyStoppingConfig>,
) -> Result<ScheduleConfig> {
    let kind = schedule.kind;
    misplaced(
        "train.schedule",
        KEYS,
        &set_keys(&schedule, KEYS),
        kind.name(),
    )?;
    // Counts set in code, which a file's reader checks as it reads.
    positive_counts_in_a_file(&[
        ("train.schedule.decay_steps", schedule.decay_steps),
        ("train.schedule.step_size", schedule.step_size),
    ])?;
    let milestone = (schedule.milestones.iter().flatten()).max().copied();
    counts_in_a_file(&[
        ("train.schedule.warmup_steps", Some(schedule.warmup_steps)),
        ("train.schedule.patience", schedule.patience),
        ("train.schedule.cooldown", schedule.cooldown),
        ("train.schedule.milestones", milestone),
    ])?;
    check_lr(kind, schedule.warmup_steps, lr)?;
    pieces(&schedule)?;
    let schedule = ScheduleConfig {
        min_lr: min_lr(kind, schedule.min_lr, lr)?,
        step_size: step_size(kind, schedule.step_size)?,
        gamma: gamma(kind, schedule.gamma)?,
        ..schedule
    };
    match kind {
        ScheduleKind::Plateau => plateau(schedule, early),
        _ => Ok(schedule),
    }
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

/// `piecewise`'s milestones (epochs, increasing, above 0) and a factor for each (above 0),
/// both required; without a warmup, whose steps would move them.
fn pieces(schedule: &ScheduleConfig) -> Result<()> {
    if schedule.kind != ScheduleKind::Piecewise {
        return Ok(());
    }
    let required = |key: &str| {
        Invalid::new(
            key,
            "is required with kind = \"piecewise\": the epochs after which the rate changes \
             (milestones) and the factor of train.lr from each on (factors)",
        )
    };
    let milestones =
        (schedule.milestones.as_ref()).ok_or_else(|| required("train.schedule.milestones"))?;
    let factors = (schedule.factors.as_ref()).ok_or_else(|| required("train.schedule.factors"))?;
    let key = "train.schedule.milestones";
    if milestones.is_empty() || milestones.windows(2).any(|w| w[1] <= w[0]) || milestones[0] == 0 {
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
    if schedule.warmup_steps > 0 {
        return Err(Invalid::new(
            "train.schedule.warmup_steps",
            "does not go with kind = \"piecewise\", whose milestones count epochs from the \
             run's start: write the warmup's rate as a first piece",
        ));
    }
    Ok(())
}

/// `step`'s steps between two decays: required.
fn step_size(kind: ScheduleKind, step_size: Option<usize>) -> Result<Option<usize>> {
    match (kind, step_size) {
        (ScheduleKind::Step, None) => Err(Invalid::new(
            "train.schedule.step_size",
            "is required with kind = \"step\": the optimizer steps between two decays",
        )),
        (_, step_size) => Ok(step_size),
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
