//! The epoch loop, in phases, each in its own file: set-up (`setup`), the start or the restore
//! of a checkpoint (`restore`), an epoch's steps (`pass`), one step with its shrink retry
//! (`step`), validation (`validate`), and the end of an epoch with its decisions (`end`).
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

use super::checkpoint::{Checkpoint, CheckpointState, Checkpointer};
use super::stats::Stats;
use crate::config::RunConfig;
use crate::data::DataError;
use crate::error::Error;
use crate::task::Task;
use crate::train::gate::{Ending, EpochGate};
use crate::train::{MemoryGuard, RunRecorder};

use setup::Run;
pub(super) use setup::{empty_training_split, seeded, seeded_model, steps_per_epoch};

/// One run's epochs.
pub(super) struct Epochs<'a, T: Task> {
    pub(super) config: &'a RunConfig,
    pub(super) task: &'a T,
    pub(super) device: &'a Device,
    pub(super) guard: &'a mut MemoryGuard,
    pub(super) recorder: &'a mut RunRecorder,
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

/// A training pass's position, for the limit's messages and the progress line.
#[derive(Clone, Copy)]
struct Position {
    epoch: usize,
    step: usize,
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
        self.finish(&run, matches!(result, Ok(Ending::Completed)));
        result
    }

    fn epochs(&mut self, run: &mut Run<T>) -> Result<Ending, Error> {
        let start = self.start(run)?;
        // Resumed after early stopping ended it (a stop before its summary): it ends there,
        // as early stopping's word comes before the gate's at an epoch's end.
        if (run.early_stop.as_ref()).is_some_and(|e| e.state().stopped_at.is_some()) {
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
            self.guard.begin_epoch(self.recorder);
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
        CheckpointState {
            epoch,
            step: self.stats.steps,
            layout_factor: self.guard.layout().factor,
            loss_scaler: run.precision.scaler().cloned(),
            skipped_steps: self.stats.skipped_steps,
            lr: Some(run.schedule.current()),
            clipped_steps: self.stats.clipped_steps,
            early_stop: run.early_stop.as_ref().map(|e| e.state().clone()),
            ..CheckpointState::default()
        }
    }

    /// Writes, under the limit, the checkpoint of `state`; with `best`, it also becomes
    /// `checkpoints/best`.
    fn checkpoint(
        &mut self,
        run: &Run<T>,
        state: CheckpointState,
        best: bool,
    ) -> Result<(), Error> {
        let checkpointer = self.checkpointer;
        self.guard.checkpoint(self.recorder, state.epoch, || {
            checkpointer.save_run(
                &state,
                run.model(),
                &run.optimizer,
                Some(&run.schedule),
                best,
            )
        })?;
        Ok(())
    }
}

/// The device generator's seed for step `step` of a run seeded with `seed` (SplitMix64's
/// finaliser, so that neighbouring steps get unrelated seeds).
pub(in crate::train) fn step_seed(seed: u64, step: usize) -> u64 {
    let mut z = seed ^ (step as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn loader_error(e: DatasetError) -> Error {
    Error::Data(DataError::Unusable(format!("data loader: {e}")))
}
