//! `[checkpoint]`: `every_steps`, and `keep_best` with the figure that ranks the epochs
//! (`monitor`, `mode`): by default early stopping's, where the run has it, else `val_loss`.

use super::{choice, positive, Invalid, Result};
use crate::config::defaults;
use crate::config::raw::RawCheckpoint;
use crate::config::types::{CheckpointConfig, EarlyStoppingConfig, KeepBest, Monitor, MonitorMode};

pub(super) fn checkpoint(
    raw: RawCheckpoint,
    early: Option<&EarlyStoppingConfig>,
) -> Result<CheckpointConfig> {
    let every_steps = (raw.every_steps)
        .map(|n| positive("checkpoint.every_steps", Some(n), 0))
        .transpose()?;
    let keep_best = match raw.keep_best {
        Some(k) => Some(keep_best(k, raw.monitor, raw.mode.as_deref(), early)?),
        None if raw.monitor.is_some() || raw.mode.is_some() => {
            let key = match raw.monitor {
                Some(_) => "checkpoint.monitor",
                None => "checkpoint.mode",
            };
            return Err(Invalid::new(
                key,
                "ranks the checkpoints that checkpoint.keep_best keeps; set keep_best too",
            ));
        }
        None => None,
    };
    Ok(CheckpointConfig {
        every_steps,
        keep_best,
    })
}

fn keep_best(
    k: i64,
    monitor: Option<String>,
    mode: Option<&str>,
    early: Option<&EarlyStoppingConfig>,
) -> Result<KeepBest> {
    let keep_best = positive("checkpoint.keep_best", Some(k), 0)?;
    let (monitor, natural) = match (monitor, early) {
        (Some(monitor), _) => {
            let natural = Monitor::natural_mode(&monitor)
                .map_err(|m| Invalid::new("checkpoint.monitor", m))?;
            (monitor, natural)
        }
        // Early stopping's figure, and its mode, unless this one is given.
        (None, Some(early)) => (early.monitor.clone(), early.mode()),
        (None, None) => (defaults::MONITOR.to_string(), MonitorMode::Min),
    };
    let mode = choice(
        "checkpoint.mode",
        mode,
        natural,
        &[("min", MonitorMode::Min), ("max", MonitorMode::Max)],
    )?;
    Ok(KeepBest {
        keep_best,
        monitor,
        mode,
    })
}
