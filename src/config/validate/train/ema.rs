//! `[train.ema]` beyond its types: `decay` in (0, 1). The table's keys and defaults are
//! [`EmaConfig`]'s, read as the file has them.

use super::super::{Invalid, Result};
use crate::config::types::EmaConfig;
use crate::config::Number;

pub(super) fn ema(ema: EmaConfig) -> Result<EmaConfig> {
    let decay = ema.decay;
    if !(decay.is_finite() && decay > 0.0 && decay < 1.0) {
        return Err(Invalid::new(
            "train.ema.decay",
            format_args!(
                "must be in (0, 1): the average keeps that share each step; got {}",
                Number(decay)
            ),
        ));
    }
    Ok(ema)
}
