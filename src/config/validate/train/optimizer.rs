//! The optimizer's keys: each applies to some optimizers only, and gets its default there.

use super::super::{finite_in, misplaced_by, set_keys, Invalid, Result};
use crate::config::defaults;
use crate::config::types::TrainConfig;

/// The optimizer's settings, each `None` where the optimizer has no such setting.
pub(super) struct Optimizer {
    pub(super) weight_decay: f64,
    pub(super) betas: Option<[f64; 2]>,
    pub(super) eps: Option<f64>,
    pub(super) momentum: Option<f64>,
    pub(super) nesterov: Option<bool>,
    pub(super) alpha: Option<f64>,
}

/// Which optimizers take each key.
const KEYS: &[(&str, &[&str])] = &[
    ("betas", &["adam", "adamw"]),
    ("eps", &["adam", "adamw", "rmsprop"]),
    ("momentum", &["sgd", "rmsprop"]),
    ("nesterov", &["sgd"]),
    ("alpha", &["rmsprop"]),
];

pub(super) fn optimizer(raw: &TrainConfig) -> Result<Optimizer> {
    let kind = raw.optimizer;
    let set = set_keys(raw, KEYS);
    misplaced_by("train", "train.optimizer", KEYS, &set, kind.name())?;
    let takes = |key: &str| {
        KEYS.iter()
            .any(|(k, kinds)| *k == key && kinds.contains(&kind.name()))
    };
    let unit = |key: &str, value: f64| finite_in(key, value, 0.0, 1.0, "in [0, 1)");
    let betas = match takes("betas") {
        true => Some(betas(raw.betas)?),
        false => None,
    };
    let eps = takes("eps")
        .then(|| {
            finite_in(
                "train.eps",
                raw.eps.unwrap_or(defaults::EPS),
                f64::MIN_POSITIVE,
                f64::MAX,
                "a finite number > 0",
            )
        })
        .transpose()?;
    let momentum = takes("momentum")
        .then(|| unit("train.momentum", raw.momentum.unwrap_or(defaults::MOMENTUM)))
        .transpose()?;
    let nesterov = takes("nesterov").then(|| raw.nesterov.unwrap_or(defaults::NESTEROV));
    if nesterov == Some(true) && momentum == Some(0.0) {
        return Err(Invalid::new(
            "train.nesterov",
            "needs train.momentum > 0 (Nesterov momentum is a kind of momentum)",
        ));
    }
    let alpha = takes("alpha")
        .then(|| unit("train.alpha", raw.alpha.unwrap_or(defaults::RMSPROP_ALPHA)))
        .transpose()?;
    Ok(Optimizer {
        weight_decay: finite_in(
            "train.weight_decay",
            raw.weight_decay,
            0.0,
            f64::MAX,
            "a finite number >= 0",
        )?,
        betas,
        eps,
        momentum,
        nesterov,
        alpha,
    })
}

fn betas(raw: Option<[f64; 2]>) -> Result<[f64; 2]> {
    let Some(values) = raw else {
        return Ok(defaults::BETAS);
    };
    match values
        .iter()
        .all(|b| b.is_finite() && (0.0..1.0).contains(b))
    {
        true => Ok(values),
        false => Err(Invalid::new(
            "train.betas",
            format_args!("must be two numbers in [0, 1), like [0.9, 0.999]; got {values:?}"),
        )),
    }
}
