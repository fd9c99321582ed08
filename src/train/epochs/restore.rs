//! Before the first step: a new run checks its resting footprint and writes checkpoint 0; a
//! resumed one loads its checkpoint (weights, optimizer, schedule, loss scaler, early
//! stopping) and replays the data order up to it.

use super::setup::Run;
use super::{loader_error, Epochs};
use crate::config::OnLimit;
use crate::error::Error;
use crate::task::Task;
use crate::train::checkpoint::CheckpointState;

impl<T: Task> Epochs<'_, T> {
    /// Where the run starts: epoch 0 for a new run, the checkpoint's state for a resumed one.
    pub(super) fn start(&mut self, run: &mut Run<T>) -> Result<CheckpointState, Error> {
        self.guard.set_footprint(run.footprint);
        let Some(checkpoint) = self.resume else {
            self.guard.run_start(run.to_come)?;
            if self.config.memory.on_limit == OnLimit::Fit {
                self.fit(run)?;
            }
            let state = self.state(run, 0);
            self.checkpoint(run, &state)?;
            return Ok(state);
        };
        let state = checkpoint.state.clone();
        if state.step_in_epoch >= run.steps_per_epoch {
            let message = format!(
                "step_in_epoch = {} but an epoch of this data has {} steps",
                state.step_in_epoch, run.steps_per_epoch
            );
            return Err(Error::checkpoint(checkpoint.dir.join("meta.json"), message));
        }
        run.learner.restore(checkpoint, &self.config.train)?;
        let (at, detail) = ((state.epoch, state.step), checkpoint.describe());
        (self.guard).resume_start(at, run.to_come, detail)?;
        // The data order: the loader reshuffles from one generator at each epoch's start, so
        // the epochs done are started (and dropped) again.
        for _ in 0..state.epoch {
            drop(run.train_loader.iter());
        }
        Ok(state)
    }
}

/// Passes over `n` batches of `batches`.
pub(super) fn skip_batches<I, B>(batches: &mut B, n: usize) -> Result<(), Error>
where
    B: Iterator<Item = Result<I, burn::data::dataset::DatasetError>> + ?Sized,
{
    for _ in 0..n {
        batches.next().transpose().map_err(loader_error)?;
    }
    Ok(())
}
