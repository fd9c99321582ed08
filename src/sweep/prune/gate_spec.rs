//! What a trial's process asks after each epoch, from the search's pruner: a [`GateSpec`]
//! (written beside a child's launch file, or handed over in the search's own process) becomes
//! the trainer's [`EpochGate`].

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::median::behind_median;
use super::record::{read_curve, Curve, Record, Standing};
use crate::config::MonitorMode;
use crate::error::Error;
use crate::record::{read_json, write_json};
use crate::train::{EpochGate, Gate};

/// A trial's gate, as the search sets it for one run of the trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GateSpec {
    /// Pause after this epoch: ASHA's next rung.
    PauseAt {
        /// The rung.
        epoch: usize,
    },
    /// The median rule, against the completed trials of the study the trial belongs to.
    Median {
        /// This trial's run directory, for its curve so far.
        run_dir: PathBuf,
        /// The monitored metric.
        monitor: String,
        /// Lower or higher is better.
        mode: MonitorMode,
        /// The first epoch that may prune.
        min_epochs: usize,
        /// Completed trials before any is pruned.
        startup: usize,
    },
}

/// Reads the completed trials for the median rule from the study's journal; `None` when it
/// cannot be read now.
pub type ReadRecord = Box<dyn FnMut() -> Option<Record> + Send>;

impl GateSpec {
    /// The gate the trainer asks, the median rule's record read by `study`. A record that
    /// cannot be read prunes nothing: the trial trains on.
    pub fn into_gate_reading(self, study: Option<ReadRecord>) -> EpochGate {
        match self {
            GateSpec::PauseAt { epoch } => Box::new(move |e, _| match e >= epoch {
                true => Gate::Pause,
                false => Gate::Go,
            }),
            GateSpec::Median {
                run_dir,
                monitor,
                mode,
                min_epochs,
                startup,
            } => {
                // The curve so far, from the run's own snapshots: a trial resumed mid-way
                // counts the epochs it trained before.
                let mut own = Curve {
                    values: read_curve(&run_dir, &monitor).unwrap_or_default(),
                    standing: Standing::Running,
                    reason: None,
                };
                let mut read: ReadRecord = study.unwrap_or_else(|| Box::new(|| None));
                Box::new(move |epoch, values| {
                    own.values.resize(epoch.saturating_sub(1), None);
                    own.values.push(values.get(&monitor).copied());
                    let Some(now) = read() else {
                        return Gate::Go;
                    };
                    match behind_median(&own, epoch, &now, mode, min_epochs, startup) {
                        Some(reason) => Gate::Prune(reason),
                        None => Gate::Go,
                    }
                })
            }
        }
    }

    /// This gate for the run in `run_dir`: a child's gate reads its own run's curve, wherever
    /// the file it was read from says the run is.
    pub fn for_run(self, run_dir: &Path) -> GateSpec {
        match self {
            GateSpec::Median {
                monitor,
                mode,
                min_epochs,
                startup,
                ..
            } => GateSpec::Median {
                run_dir: run_dir.to_path_buf(),
                monitor,
                mode,
                min_epochs,
                startup,
            },
            other => other,
        }
    }

    /// Writes it to `path` for a child; `None` removes an earlier run's.
    pub fn write(gate: Option<&GateSpec>, path: &Path) -> Result<(), Error> {
        match gate {
            Some(gate) => Ok(write_json(path, gate)?),
            None => match std::fs::remove_file(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(path, e)),
                _ => Ok(()),
            },
        }
    }

    /// The gate a child's launch left at `path`, if any.
    pub fn read(path: &Path) -> Result<Option<GateSpec>, Error> {
        Ok(read_json(path, "a trial's gate")?)
    }
}
