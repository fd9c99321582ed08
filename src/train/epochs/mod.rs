//! The trainer's epoch loop, on the learner's calls, in phases, each in its own file: set-up
//! (`setup`), the start or the restore of a checkpoint (`restore`), an epoch's steps with
//! progress and checkpoints inside it (`pass`), one step over the loader's items (`step`),
//! validation (`validate`), and the end of an epoch with the gate's word (`end`).
//! Generic over the [`Task`]; nothing here knows a model kind.

mod advise;
mod end;
mod fit;
mod pass;
mod probe;
mod restore;
mod setup;
mod step;
mod validate;

use std::sync::atomic::{AtomicBool, Ordering};

use burn::data::dataset::DatasetError;
use burn::tensor::Device;

use super::checkpoint::{Checkpoint, CheckpointState, Checkpointer, Marks};
use super::learner::Position;
use super::stats::Stats;
use crate::config::RunConfig;
use crate::data::DataError;
use crate::error::Error;
use crate::task::Task;
use crate::train::gate::{Ending, EpochGate};
use crate::train::MemoryGuard;

pub(super) use pass::REPORT_INTERVAL;
use setup::Run;
pub(super) use setup::{empty_training_split, seeded, seeded_model, steps_per_epoch};

/// One run's epochs.
pub(super) struct Epochs<'a, T: Task> {
    pub(super) config: &'a RunConfig,
    pub(super) task: &'a T,
    pub(super) device: &'a Device,
    pub(super) guard: &'a mut MemoryGuard,
    pub(super) stats: &'a mut Stats,
    pub(super) checkpointer: &'a Checkpointer,
    /// The checkpoint a resumed run continues from.
    pub(super) resume: Option<&'a Checkpoint>,
    /// The dataset's bytes, where the allocator counted them as it loaded.
    pub(super) data_bytes: Option<u64>,
    /// A search's pruner, asked after each epoch but the last.
    pub(super) gate: Option<&'a mut EpochGate>,
    /// Set to stop the run at its next step (see [`Trainer::stop_when`](crate::Trainer::stop_when)).
    pub(super) stop: Option<&'a AtomicBool>,
}

impl<T: Task> Epochs<'_, T> {
    /// Trains every epoch still to do, or until early stopping ends the run.
    /// A run that fails still records early stopping's outcome so far (its best checkpoint)
    /// for the summary.
    /// A run its gate pauses or prunes ends there, with its checkpoint and without advice.
    pub(super) fn train(mut self) -> Result<Ending, Error> {
        let mut run = self.set_up()?;
        let ending = self.epochs(&mut run);
        let result = match ending {
            Ok(Ending::Completed) => self.advise_run(&run, Ok(())).map(|()| Ending::Completed),
            Ok(stopped) => Ok(stopped),
            Err(e) => self.advise_run(&run, Err(e)).map(|()| Ending::Completed),
        };
        let completed = matches!(result, Ok(Ending::Completed));
        (run.learner).finish(self.guard, self.stats, completed);
        result
    }

    fn epochs(&mut self, run: &mut Run<T>) -> Result<Ending, Error> {
        let start = self.start(run)?;
        // Resumed after early stopping ended it (a stop before its summary): it ends there,
        // as early stopping's word comes before the gate's at an epoch's end.
        if run.learner.stopped_early() {
            return Ok(Ending::Completed);
        }
        if let Some(ending) = self.gate_at_resume(&start)? {
            return Ok(ending);
        }
        for epoch in start.epoch + 1..=self.config.train.epochs {
            // The checkpoint of the epoch before (or the one resumed from) is the latest.
            if self.stopping() {
                return Err(Error::Interrupted);
            }
            self.guard.begin_epoch();
            let resumed = (epoch == start.epoch + 1 && start.step_in_epoch > 0).then_some(&start);
            let tally = self.pass(run, epoch, resumed)?;
            if let Some(ending) = self.end_epoch(run, epoch, tally)? {
                return Ok(ending);
            }
        }
        Ok(Ending::Completed)
    }

    /// Whether the run was asked to stop.
    fn stopping(&self) -> bool {
        self.stop.is_some_and(|s| s.load(Ordering::SeqCst))
    }

    /// The run's state after `epoch` epochs, for a checkpoint.
    fn state(&self, run: &Run<T>, epoch: usize) -> CheckpointState {
        run.learner.state(self.stats, self.guard, epoch)
    }

    /// Writes, under the limit, the checkpoint of `state`.
    fn checkpoint(&mut self, run: &Run<T>, state: &CheckpointState) -> Result<(), Error> {
        (run.learner).checkpoint(self.guard, self.checkpointer, state, Marks::default())
    }
}

fn loader_error(e: DatasetError) -> Error {
    Error::Data(DataError::Unusable(format!("data loader: {e}")))
}
