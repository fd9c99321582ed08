//! Hooks for showing progress. The CLI prints to the terminal; library users pick their own.

use std::fmt;

use super::growth::GrowthAlarm;
use super::search_status::SearchStatus;
use super::snapshots::Snapshot;
use crate::memory::format_bytes;

/// Progress within an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct EpochProgress {
    /// Current epoch (1-based).
    pub epoch: usize,
    /// Total epochs.
    pub epochs: usize,
    /// Optimizer steps done in this epoch.
    pub step: usize,
    /// Optimizer steps in this epoch.
    pub steps: usize,
    /// Most recent step's loss.
    pub loss: f64,
    /// The learning rate of the most recent step.
    pub lr: Option<f64>,
    /// Training samples per second in this epoch so far (steps only, not validation).
    pub samples_per_sec: f64,
    /// Seconds until this epoch's steps are done, at this epoch's pace so far.
    pub epoch_eta_s: f64,
    /// Seconds until the run's last step, at this epoch's pace (validation not counted).
    pub run_eta_s: f64,
    /// Bytes in use now, as the memory figures count them.
    pub bytes_in_use: Option<u64>,
    /// The memory limit, if one is set.
    pub limit_bytes: Option<u64>,
}

/// Something that went wrong without stopping the run.
#[derive(Debug, Clone, PartialEq)]
pub enum Warning {
    /// The run kept bytes in use after releasing everything.
    Retained {
        /// Bytes kept.
        bytes: u64,
        /// The run's peak in use.
        peak: u64,
    },
    /// With a `clear` policy, the device pools still reserve more than before the run.
    PoolsReserved {
        /// Bytes more than the baseline.
        bytes: u64,
    },
    /// Memory in use rose epoch after epoch.
    Growth(GrowthAlarm),
    /// `memory.svg` could not be drawn (the snapshots it comes from are intact): the file
    /// being drawn or read, and why (a [`ReportError`](crate::report::ReportError)'s).
    PictureNotDrawn {
        /// The file.
        path: std::path::PathBuf,
        /// What went wrong, on one line.
        cause: String,
    },
    /// The TensorBoard event file could not be written: the run goes on without it.
    TensorBoardNotWritten {
        /// The file.
        path: std::path::PathBuf,
        /// What went wrong, on one line.
        cause: String,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::Retained { bytes, peak } => write!(
                f,
                "the run kept {} in use after releasing everything ({:.1}% of its {} peak)",
                format_bytes(*bytes),
                100.0 * *bytes as f64 / (*peak).max(1) as f64,
                format_bytes(*peak)
            ),
            Warning::PoolsReserved { bytes } => write!(
                f,
                "the device pools still reserve {} more than before the run (a page stays \
                 reserved while anything still lives in it; see docs/cubecl-memory.md)",
                format_bytes(*bytes)
            ),
            Warning::Growth(alarm) => write!(
                f,
                "memory in use grew every epoch: about {} per epoch after epoch {} (something \
                 keeps tensors or outputs alive across epochs)",
                format_bytes(alarm.slope_bytes_per_epoch.max(0.0) as u64),
                alarm.epoch
            ),
            Warning::PictureNotDrawn { path, cause } => {
                write!(f, "memory.svg not drawn: {}: {cause}", path.display())
            }
            Warning::TensorBoardNotWritten { path, cause } => write!(
                f,
                "TensorBoard's event file not written from here on: {}: {cause}",
                path.display()
            ),
        }
    }
}

/// Receives progress while a run trains. Every method has a do-nothing default.
pub trait Observer {
    /// A line worth telling the user (run directory, backend notes).
    fn message(&mut self, _text: &str) {}
    /// Something went wrong without stopping the run.
    fn warning(&mut self, _warning: &Warning) {}
    /// Some steps into an epoch (about once a second, and at each epoch's end).
    fn step(&mut self, _progress: &EpochProgress) {}
    /// After every optimizer step (applied or skipped): `step` is 1-based within `epoch`.
    /// Called on the training thread without waiting for the device; a benchmark that syncs
    /// here times each step with the device's work inside.
    fn step_done(&mut self, _epoch: usize, _step: usize) {}
    /// A snapshot was written.
    fn snapshot(&mut self, _snapshot: &Snapshot) {}
    /// Where a search with trials in parallel stands (at each start and end, and about once a
    /// second), for a live view.
    fn search_status(&mut self, _status: &SearchStatus) {}
}

/// An observer that shows nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Observer for Silent {}

/// A boxed observer is an observer, so a caller can choose one at run time.
impl Observer for Box<dyn Observer> {
    fn message(&mut self, text: &str) {
        (**self).message(text)
    }
    fn warning(&mut self, warning: &Warning) {
        (**self).warning(warning)
    }
    fn step(&mut self, progress: &EpochProgress) {
        (**self).step(progress)
    }
    fn step_done(&mut self, epoch: usize, step: usize) {
        (**self).step_done(epoch, step)
    }
    fn snapshot(&mut self, snapshot: &Snapshot) {
        (**self).snapshot(snapshot)
    }
    fn search_status(&mut self, status: &SearchStatus) {
        (**self).search_status(status)
    }
}
