//! `[checkpoint]` beyond its types: a count set in code is above 0 as a file's must be, the
//! figure that ranks the best epochs is a validation figure, and `monitor` and `mode` where
//! `keep_best` is set but they are not: early stopping's, where the run has it, else
//! `val_loss` (each with its own way). The table's keys are [`CheckpointConfig`]'s.

use super::{monitor_of, positive_counts_in_a_file, Invalid, Result};
use crate::config::types::{CheckpointConfig, EarlyStoppingConfig};

pub(super) fn checkpoint(
    checkpoint: CheckpointConfig,
    early: Option<&EarlyStoppingConfig>,
) -> Result<CheckpointConfig> {
    positive_counts_in_a_file(&[
        ("checkpoint.every_steps", checkpoint.every_steps),
        ("checkpoint.keep_best", checkpoint.keep_best),
    ])?;
    if checkpoint.keep_best.is_none() {
        let key = match (&checkpoint.monitor, &checkpoint.mode) {
            (Some(_), _) => "checkpoint.monitor",
            (None, Some(_)) => "checkpoint.mode",
            (None, None) => return Ok(checkpoint),
        };
        return Err(Invalid::new(
            key,
            "ranks the checkpoints that checkpoint.keep_best keeps; set keep_best too",
        ));
    }
    let (monitor, mode) = monitor_of(
        "checkpoint.monitor",
        checkpoint.monitor,
        checkpoint.mode,
        early,
    )?;
    Ok(CheckpointConfig {
        monitor,
        mode,
        ..checkpoint
    })
}
