//! Hooks for showing progress. The CLI prints to the terminal; library users pick their own.

use crate::report::Snapshot;

/// Progress within an epoch.
#[derive(Debug, Clone, Copy, PartialEq)]
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
}

/// Receives progress while a run trains. Every method has a do-nothing default.
pub trait Observer {
    /// A line worth telling the user (run directory, backend notes).
    fn message(&mut self, _text: &str) {}
    /// Some steps into an epoch (about ten times per epoch).
    fn step(&mut self, _progress: &EpochProgress) {}
    /// After every optimizer step (applied or skipped): `step` is 1-based within `epoch`.
    /// Called on the training thread without waiting for the device; a benchmark that syncs
    /// here times each step with the device's work inside.
    fn step_done(&mut self, _epoch: usize, _step: usize) {}
    /// A snapshot was written.
    fn snapshot(&mut self, _snapshot: &Snapshot) {}
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
    fn step(&mut self, progress: &EpochProgress) {
        (**self).step(progress)
    }
    fn step_done(&mut self, epoch: usize, step: usize) {
        (**self).step_done(epoch, step)
    }
    fn snapshot(&mut self, snapshot: &Snapshot) {
        (**self).snapshot(snapshot)
    }
}
