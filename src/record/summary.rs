//! `summary.json`: the run in one object.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::{Backend, Execution, Monitor, Precision};
use crate::memory::{AdviceRecord, Breakdown, MemorySource};
use crate::record::{GrowthAlarm, RecordError, Retained};

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status", content = "error")]
pub enum RunStatus {
    /// Every epoch ran.
    Completed,
    /// The run stopped with this error; snapshots up to it are on disk.
    Failed(String),
    /// A search's pruner paused it at a rung, after its checkpoint: resuming goes on from there.
    Paused,
    /// A search's pruner stopped it for good (its `stopped_by` says why), after its checkpoint.
    Pruned,
}

/// One of the best epochs' checkpoints that `checkpoint.keep_best` keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankedCheckpoint {
    /// Its directory's name in `checkpoints/` (`epoch-7`).
    pub name: String,
    /// The epoch it was written after.
    pub epoch: usize,
    /// The monitored figure's value that epoch.
    pub value: f64,
}

/// The outcome of a run, as returned to callers and written to `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Run name.
    pub name: String,
    /// The run directory.
    pub run_dir: PathBuf,
    /// How the run ended.
    #[serde(flatten)]
    pub status: RunStatus,
    /// The task trained (`classify`, `regress`, `forecast`, or a user's task name).
    #[serde(default)]
    pub task: String,
    /// The backend.
    pub backend: Backend,
    /// Where memory figures came from.
    pub memory_source: MemorySource,
    /// How operations ran: `eager` or `fused`.
    #[serde(default)]
    pub execution: Execution,
    /// Compute precision: `f32`, `bf16` or `f16`.
    #[serde(default)]
    pub precision: Precision,
    /// With loss scaling: the scale at the end of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_scale: Option<f64>,
    /// Optimizer steps skipped for non-finite gradients (loss scaling).
    #[serde(default)]
    pub skipped_steps: u64,
    /// Optimizer steps whose gradient was clipped (`clip_grad_norm`, `clip_grad_value`).
    #[serde(default)]
    pub clipped_steps: u64,
    /// Why a search's pruner stopped the run (status `pruned`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
    /// Whether early stopping ended the run before `train.epochs`.
    #[serde(default)]
    pub stopped_early: bool,
    /// With early stopping: the metric it watched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor: Option<String>,
    /// With early stopping: the epoch with the best value of `monitor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_epoch: Option<usize>,
    /// With early stopping: that best value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_value: Option<f64>,
    /// With early stopping: the best epoch's checkpoint (`checkpoints/best`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_checkpoint: Option<PathBuf>,
    /// With `checkpoint.keep_best`: the best epochs' checkpoints, best first (`best-1`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub best_checkpoints: Vec<RankedCheckpoint>,
    /// Epochs completed.
    pub epochs: usize,
    /// Optimizer steps completed.
    pub steps: usize,
    /// Training samples.
    pub train_samples: usize,
    /// Validation samples.
    pub valid_samples: usize,
    /// Training loss of the first epoch.
    pub first_loss: Option<f64>,
    /// Training loss of the last epoch.
    pub final_loss: Option<f64>,
    /// Validation loss after the last epoch.
    pub final_val_loss: Option<f64>,
    /// Highest `peak_bytes_in_use` of any epoch.
    pub peak_bytes_in_use: u64,
    /// Highest `bytes_reserved` seen.
    pub peak_bytes_reserved: u64,
    /// Mean training throughput.
    pub samples_per_sec: Option<f64>,
    /// Samples per micro-batch at the end (smaller than configured if a limit shrank it).
    pub micro_batch: usize,
    /// Micro-batches per optimizer step at the end.
    pub accumulation_steps: usize,
    /// `memory_action` events written.
    pub memory_actions: usize,
    /// Bytes the backend kept from its warm-up before the run (one-time state such as matrix
    /// product workspaces; about 0 after the first run of a process).
    pub device_init_bytes: i64,
    /// This process's how-many-th run (1 for its first, which carries the process's one-time
    /// state; 0 in summaries written before it was recorded).
    #[serde(default)]
    pub run_in_process: usize,
    /// Bytes reserved before the run (the baseline `retained` is measured from).
    pub baseline_bytes_reserved: u64,
    /// What the run kept after releasing everything (see the `run_end` event).
    #[serde(default, skip_serializing_if = "Option::is_none", flatten)]
    pub retained: Option<Retained>,
    /// The memory limit in bytes, if one was set.
    pub limit_bytes: Option<u64>,
    /// Raised when in-use memory rose epoch after epoch (a leak), with its slope.
    pub growth_alarm: Option<GrowthAlarm>,
    /// The peak of the epoch with the highest peak, by category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<Breakdown>,
    /// The memory advisor's levers, by what each would save on the training peak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<AdviceRecord>,
    /// The checkpoint holding the run's final weights: the best epoch's with
    /// `train.early_stopping.restore_best`, else the latest complete one.
    pub checkpoint: Option<PathBuf>,
    /// Wall time of the run.
    pub wall_time_s: f64,
    /// Simple predictors scored on the validation data (a forecast's seasonal-naive and
    /// linear-trend errors), to read the final metrics against.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub baselines: BTreeMap<String, BTreeMap<String, f64>>,
    /// The task's metrics after the last epoch, keyed `final_val_<name>` and
    /// `final_train_<name>` (`final_val_accuracy`, `final_val_rmse`). Last, so that reading
    /// the file back gives it only the keys no other field took.
    #[serde(flatten)]
    pub final_metrics: BTreeMap<String, f64>,
}

impl RunSummary {
    /// A final metric by its epoch key (`val_accuracy`, `val_rmse`), if the task reported it.
    pub fn metric(&self, key: &str) -> Option<f64> {
        self.final_metrics.get(&format!("final_{key}")).copied()
    }

    /// The run's value of `monitor` (`val_loss` or a metric's epoch key): the best epoch's
    /// where early stopping watched it, else the last epoch's.
    pub fn monitored(&self, monitor: &str) -> Option<f64> {
        if self.monitor.as_deref() == Some(monitor) {
            if let Some(best) = self.best_value {
                return Some(best);
            }
        }
        Monitor::value_of(monitor, self.final_val_loss, |key| self.metric(key))
    }

    /// The `summary.json` in `run_dir`: `None` if there is none (the run has not finished, or
    /// was killed), and an error naming the file if it is there but cannot be read, so that
    /// a damaged summary is never taken for a run that did not run.
    pub fn read(run_dir: &Path) -> Result<Option<RunSummary>, RecordError> {
        let path = run_dir.join("summary.json");
        if let Err(why) = super::names::inside(run_dir, &path) {
            let message = format!("{why}; nothing was read or changed");
            return Err(RecordError::corrupt(&path, None, message));
        }
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(RecordError::io(&path, e)),
        };
        super::parse_json(&bytes)
            .map_err(|e| RecordError::corrupt(&path, None, format!("not a run summary: {e}")))
            .and_then(|summary: RunSummary| match summary.epochs > MAX_EPOCHS {
                // What reads it draws a line or a table row for each epoch.
                true => {
                    let message = format!(
                        "not a run summary: epochs is {}, past the {MAX_EPOCHS} a run's records \
                         are read for",
                        summary.epochs
                    );
                    Err(RecordError::corrupt(&path, None, message))
                }
                false => Ok(Some(summary)),
            })
    }
}

/// The most epochs a run's records are read for (a summary, a study's rows, a population's
/// schedule, each drawn epoch by epoch): a file that records more was not written by a run.
pub const MAX_EPOCHS: usize = 1_000_000;
