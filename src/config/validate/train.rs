//! `[train]`: the loop's own keys, then the optimizer's, the clipping's, and the two tables.

use super::{finite_in, positive_counts_in_a_file, Invalid, Result};
use crate::config::types::*;
use crate::config::Number;

mod early_stopping;
mod ema;
mod optimizer;
mod plateau;
mod schedule;

pub(super) fn train(train: TrainConfig) -> Result<TrainConfig> {
    let lr = train.lr;
    if !(lr.is_finite() && lr > 0.0) {
        return Err(Invalid::new(
            "train.lr",
            format_args!("must be a finite number > 0, got {}", Number(lr)),
        ));
    }
    // Counts set in code, which a file's reader checks as it reads.
    positive_counts_in_a_file(&[
        ("train.epochs", Some(train.epochs)),
        ("train.batch_size", Some(train.batch_size)),
        ("train.accumulation_steps", Some(train.accumulation_steps)),
        (
            "train.loss_scale_growth_interval",
            Some(train.loss_scale_growth_interval),
        ),
    ])?;
    let loss_scaling = mixed_precision(&train)?;
    let optimizer = optimizer::optimizer(&train)?;
    clipping(&train)?;
    let early_stopping = (train.early_stopping)
        .map(early_stopping::early_stopping)
        .transpose()?;
    let schedule = (train.schedule)
        .map(|s| schedule::schedule(s, lr, early_stopping.as_ref()))
        .transpose()?;
    Ok(TrainConfig {
        // "find": the default rate until the finder's replaces it, as a file's reads.
        lr: match train.find_lr {
            true => TrainConfig::default().lr,
            false => lr,
        },
        // The finder's sweep is set on its own copy after validation; no config holds one.
        lr_range: None,
        loss_scaling: Some(loss_scaling),
        weight_decay: optimizer.weight_decay,
        betas: optimizer.betas,
        eps: optimizer.eps,
        momentum: optimizer.momentum,
        nesterov: optimizer.nesterov,
        alpha: optimizer.alpha,
        schedule,
        early_stopping,
        ema: train.ema.map(ema::ema).transpose()?,
        ..train
    })
}

/// `train.loss_scaling` (dynamic for f16 unless turned off) and `train.initial_loss_scale`.
fn mixed_precision(train: &TrainConfig) -> Result<LossScaling> {
    let loss_scaling = train.loss_scaling();
    if loss_scaling == LossScaling::Dynamic && train.precision == Precision::F32 {
        return Err(Invalid::new(
            "train.loss_scaling",
            "\"dynamic\" needs train.precision = \"f16\" or \"bf16\"; f32 gradients do not underflow",
        ));
    }
    finite_in(
        "train.initial_loss_scale",
        train.initial_loss_scale,
        f64::MIN_POSITIVE,
        f64::MAX,
        "a finite number > 0",
    )?;
    Ok(loss_scaling)
}

/// `clip_grad_norm` and `clip_grad_value`: each a finite number > 0, and at most one of them.
fn clipping(train: &TrainConfig) -> Result<()> {
    let check = |key: &str, value: Option<f64>| {
        value
            .map(|v| finite_in(key, v, f64::MIN_POSITIVE, f64::MAX, "a finite number > 0"))
            .transpose()
    };
    let norm = check("train.clip_grad_norm", train.clip_grad_norm)?;
    let value = check("train.clip_grad_value", train.clip_grad_value)?;
    if norm.is_some() && value.is_some() {
        return Err(Invalid::new(
            "train.clip_grad_value",
            "cannot be set with train.clip_grad_norm; choose one way to clip",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
