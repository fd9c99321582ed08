//! `summary.json`: the run in one object.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::memory::MemorySource;

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status", content = "error")]
pub enum RunStatus {
    /// Every epoch ran.
    Completed,
    /// The run stopped with this error; snapshots up to it are on disk.
    Failed(String),
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
    /// Backend name.
    pub backend: String,
    /// Where memory figures came from.
    pub memory_source: MemorySource,
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
    /// Validation accuracy after the last epoch.
    pub final_val_accuracy: Option<f64>,
    /// Highest `peak_bytes_in_use` of any epoch.
    pub peak_bytes_in_use: u64,
    /// Highest `bytes_reserved` seen.
    pub peak_bytes_reserved: u64,
    /// Mean training throughput.
    pub samples_per_sec: Option<f64>,
    /// Wall time of the run.
    pub wall_time_s: f64,
}
