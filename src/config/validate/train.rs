//! `[train]`: the loop's own keys, then the optimizer's, the clipping's, and the two tables.

use super::{choice, finite_in, positive, Invalid, Result};
use crate::config::defaults;
use crate::config::raw::*;
use crate::config::types::*;
use crate::config::Number;

mod early_stopping;
mod ema;
mod optimizer;
mod plateau;
mod schedule;

pub(super) fn train(raw: RawTrain) -> Result<TrainConfig> {
    // "find": the finder's rate replaces the default before the run trains.
    let (lr, find_lr) = match &raw.lr {
        None => (defaults::LR, false),
        Some(RawLr::Rate(lr)) => (*lr, false),
        Some(RawLr::Word(word)) if word == "find" => (defaults::LR, true),
        Some(RawLr::Word(other)) => {
            let message = format!("must be a number, or \"find\"; got \"{other}\"");
            return Err(Invalid::new("train.lr", message));
        }
    };
    if !(lr.is_finite() && lr > 0.0) {
        return Err(Invalid::new(
            "train.lr",
            format_args!("must be a finite number > 0, got {}", Number(lr)),
        ));
    }
    let (precision, loss_scaling, initial_loss_scale) = mixed_precision(&raw)?;
    let optimizer = optimizer::optimizer(&raw)?;
    let (clip_grad_norm, clip_grad_value) = clipping(&raw)?;
    let early_stopping = raw
        .early_stopping
        .map(early_stopping::early_stopping)
        .transpose()?;
    let schedule = raw
        .schedule
        .map(|s| schedule::schedule(s, lr, early_stopping.as_ref()))
        .transpose()?;
    Ok(TrainConfig {
        gradient_checkpointing: raw
            .gradient_checkpointing
            .unwrap_or(defaults::GRADIENT_CHECKPOINTING),
        precision,
        loss_scaling,
        initial_loss_scale,
        loss_scale_growth_interval: positive(
            "train.loss_scale_growth_interval",
            raw.loss_scale_growth_interval,
            defaults::LOSS_SCALE_GROWTH_INTERVAL,
        )?,
        epochs: positive("train.epochs", raw.epochs, defaults::EPOCHS)?,
        batch_size: positive("train.batch_size", raw.batch_size, defaults::BATCH_SIZE)?,
        accumulation_steps: positive(
            "train.accumulation_steps",
            raw.accumulation_steps,
            defaults::ACCUMULATION_STEPS,
        )?,
        optimizer: optimizer.kind,
        lr,
        weight_decay: optimizer.weight_decay,
        betas: optimizer.betas,
        eps: optimizer.eps,
        momentum: optimizer.momentum,
        nesterov: optimizer.nesterov,
        alpha: optimizer.alpha,
        clip_grad_norm,
        clip_grad_value,
        schedule,
        early_stopping,
        lr_range: None,
        find_lr,
        offload: raw.offload.unwrap_or_default(),
        ema: raw.ema.map(ema::ema).transpose()?,
    })
}

/// `train.precision`, `train.loss_scaling` (dynamic for f16 unless turned off) and
/// `train.initial_loss_scale`.
fn mixed_precision(raw: &RawTrain) -> Result<(Precision, LossScaling, f64)> {
    let precision = choice(
        "train.precision",
        raw.precision.as_deref(),
        defaults::PRECISION,
        &[
            ("f32", Precision::F32),
            ("bf16", Precision::Bf16),
            ("f16", Precision::F16),
        ],
    )?;
    let loss_scaling = choice(
        "train.loss_scaling",
        raw.loss_scaling.as_deref(),
        match precision {
            Precision::F16 => LossScaling::Dynamic,
            Precision::F32 | Precision::Bf16 => LossScaling::Off,
        },
        &[("dynamic", LossScaling::Dynamic), ("off", LossScaling::Off)],
    )?;
    if loss_scaling == LossScaling::Dynamic && precision == Precision::F32 {
        return Err(Invalid::new(
            "train.loss_scaling",
            "\"dynamic\" needs train.precision = \"f16\" or \"bf16\"; f32 gradients do not underflow",
        ));
    }
    let initial_loss_scale = finite_in(
        "train.initial_loss_scale",
        raw.initial_loss_scale
            .unwrap_or(defaults::INITIAL_LOSS_SCALE),
        f64::MIN_POSITIVE,
        f64::MAX,
        "a finite number > 0",
    )?;
    Ok((precision, loss_scaling, initial_loss_scale))
}

/// `clip_grad_norm` and `clip_grad_value`: each a finite number > 0, and at most one of them.
fn clipping(raw: &RawTrain) -> Result<(Option<f64>, Option<f64>)> {
    let check = |key: &str, value: Option<f64>| {
        value
            .map(|v| finite_in(key, v, f64::MIN_POSITIVE, f64::MAX, "a finite number > 0"))
            .transpose()
    };
    let norm = check("train.clip_grad_norm", raw.clip_grad_norm)?;
    let value = check("train.clip_grad_value", raw.clip_grad_value)?;
    if norm.is_some() && value.is_some() {
        return Err(Invalid::new(
            "train.clip_grad_value",
            "cannot be set with train.clip_grad_norm; choose one way to clip",
        ));
    }
    Ok((norm, value))
}

#[cfg(test)]
mod tests;
