//! `[checkpoint]` beyond its types: a count set in code is above 0 as a file's must be, the
//! figure that ranks the best epochs is a validation figure, and `monitor` and `mode` where
//! `keep_best` is set but they are not: early stopping's, where the run has it, else
//! `val_loss` (each with its own way). The table's keys are [`CheckpointConfig`]'s.

use super::{counts_in_a_file, Invalid, Result};
use crate::config::defaults;
use crate::config::types::{CheckpointConfig, EarlyStoppingConfig, Monitor};

pub(super) fn checkpoint(
    checkpoint: CheckpointConfig,
    early: Option<&EarlyStoppingConfig>,
) -> Result<CheckpointConfig> {
    let counts = [
        ("checkpoint.every_steps", checkpoint.every_steps),
        ("checkpoint.keep_best", checkpoint.keep_best),
    ];
    if let Some((key, _)) = counts.iter().find(|(_, value)| *value == Some(0)) {
        return Err(Invalid::new(key, "must be > 0, got 0"));
    }
    counts_in_a_file(&counts)?;
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
    let (monitor, natural) = match (checkpoint.monitor, early) {
        (Some(monitor), _) => {
            let natural = Monitor::natural_mode(&monitor)
                .map_err(|m| Invalid::new("checkpoint.monitor", m))?;
            (monitor, natural)
        }
        // Early stopping's figure, and its mode, unless this one is given.
        (None, Some(early)) => (early.monitor.clone(), early.mode()),
        (None, None) => {
            let monitor = defaults::MONITOR.to_string();
            let natural = Monitor::natural_mode(&monitor).expect("val_loss is a figure");
            (monitor, natural)
        }
    };
    Ok(CheckpointConfig {
        monitor: Some(monitor),
        mode: Some(checkpoint.mode.unwrap_or(natural)),
        ..checkpoint
    })
}
