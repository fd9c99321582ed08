//! `[train.ema]`: `decay` (default 0.999), `start_step` (0), `device` (`same`) and
//! `evaluate_with` (`average`).

use super::super::{choice, non_negative, Invalid, Result};
use crate::config::raw::RawEma;
use crate::config::types::{EmaConfig, EmaDevice, EmaWeights};

/// The decay timm's `ModelEmaV2` and Keras's `use_ema` default to is 0.9999 and 0.99; a run
/// of thousands of steps, tidemark's usual, moves with 0.999.
const DECAY: f64 = 0.999;

pub(super) fn ema(raw: RawEma) -> Result<EmaConfig> {
    let decay = raw.decay.unwrap_or(DECAY);
    if !(decay.is_finite() && decay > 0.0 && decay < 1.0) {
        return Err(Invalid::new(
            "train.ema.decay",
            format_args!("must be in (0, 1): the average keeps that share each step; got {decay}"),
        ));
    }
    Ok(EmaConfig {
        decay,
        start_step: non_negative("train.ema.start_step", raw.start_step, 0)? as usize,
        device: choice(
            "train.ema.device",
            raw.device.as_deref(),
            EmaDevice::Same,
            &[("same", EmaDevice::Same), ("host", EmaDevice::Host)],
        )?,
        evaluate_with: choice(
            "train.ema.evaluate_with",
            raw.evaluate_with.as_deref(),
            EmaWeights::Average,
            &[("average", EmaWeights::Average), ("raw", EmaWeights::Raw)],
        )?,
    })
}
