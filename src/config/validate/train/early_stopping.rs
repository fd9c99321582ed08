//! `[train.early_stopping]` beyond its types: the monitor is a validation figure, `min_delta` a
//! finite number >= 0, and the mode, where the file leaves it out, the monitor's own. The
//! table's keys and defaults are [`EarlyStoppingConfig`]'s, read as the file has them.

use super::super::{counts_in_a_file, finite_in, Invalid, Result};
use crate::config::types::{EarlyStoppingConfig, Monitor};

pub(super) fn early_stopping(early: EarlyStoppingConfig) -> Result<EarlyStoppingConfig> {
    let natural = Monitor::natural_mode(&early.monitor)
        .map_err(|m| Invalid::new("train.early_stopping.monitor", m))?;
    counts_in_a_file(&[("train.early_stopping.patience", Some(early.patience))])?;
    finite_in(
        "train.early_stopping.min_delta",
        early.min_delta,
        0.0,
        f64::MAX,
        "a finite number >= 0",
    )?;
    Ok(EarlyStoppingConfig {
        mode: Some(early.mode.unwrap_or(natural)),
        ..early
    })
}
