//! `[train]`.

use super::{choice, finite_in, positive, Invalid, Result};
use crate::config::defaults;
use crate::config::raw::*;
use crate::config::types::*;

pub(super) fn train(raw: RawTrain) -> Result<TrainConfig> {
    let lr = raw.lr.unwrap_or(defaults::LR);
    if !(lr.is_finite() && lr > 0.0) {
        return Err(Invalid::new(
            "train.lr",
            format_args!("must be a finite number > 0, got {lr}"),
        ));
    }
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
        optimizer: choice(
            "train.optimizer",
            raw.optimizer.as_deref(),
            defaults::OPTIMIZER,
            &[("adam", OptimizerKind::Adam), ("sgd", OptimizerKind::Sgd)],
        )?,
        lr,
        weight_decay: finite_in(
            "train.weight_decay",
            raw.weight_decay.unwrap_or(defaults::WEIGHT_DECAY),
            0.0,
            f64::MAX,
            "a finite number >= 0",
        )?,
    })
}
