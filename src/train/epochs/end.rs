//! The end of an epoch: its steps' figures, validation in its own window, then the learner's
//! end of the epoch (snapshot, early stopping's verdict, checkpoint), and the gate's word.

use super::setup::Run;
use super::Epochs;
use crate::error::Error;
use crate::record::{current_epochs, read_snapshots};
use crate::task::metrics::Means;
use crate::task::Task;
use crate::train::checkpoint::CheckpointState;
use crate::train::decide::Verdict;
use crate::train::gate::{Ending, Gate};
use crate::train::learner::Tally;
use crate::train::EpochFigures;

impl<T: Task> Epochs<'_, T> {
    /// Ends epoch `epoch`; returns whether the run ends here: `Completed` where early stopping
    /// ends it (or it goes on), `Paused` or `Pruned` where the gate stops it.
    pub(super) fn end_epoch(
        &mut self,
        run: &mut Run<T>,
        epoch: usize,
        tally: Tally,
    ) -> Result<Option<Ending>, Error> {
        let trained = run.learner.trained(tally, (epoch, self.stats.steps))?;
        // Validation in its own window, so that the limit is checked against what it held
        // (the epoch's peak also holds any attempt that shrank).
        self.guard.open_window();
        let figures = validation_figures(self.validate(run)?);
        let window = self.guard.peek_window();
        let closed = run.learner.close_epoch(
            (&mut *self.guard, &mut *self.stats),
            self.checkpointer,
            (epoch, true),
            trained,
            figures,
            &window,
        )?;
        if closed.verdict == Some(Verdict::Stop) {
            return Ok(Some(Ending::Completed));
        }
        Ok(self.gate(epoch, &closed.figures))
    }

    /// The gate's word on epoch `epoch` (none on the last), told to the user where it stops
    /// the run.
    fn gate(&mut self, epoch: usize, figures: &EpochFigures) -> Option<Ending> {
        let gate = self
            .gate
            .as_mut()
            .filter(|_| epoch < self.config.train.epochs)?;
        let mut values = figures.metrics.clone();
        if let Some(loss) = figures.val_loss {
            values.insert("val_loss".into(), loss);
        }
        let ending = match gate(epoch, &values) {
            Gate::Go => return None,
            Gate::Pause => Ending::Paused,
            Gate::Prune(reason) => Ending::Pruned(reason),
        };
        let message = match &ending {
            Ending::Pruned(reason) => format!("pruned after epoch {epoch}: {reason}"),
            _ => format!("paused after epoch {epoch}, at its checkpoint, for the search"),
        };
        self.guard.recorder_mut().tell(&message);
        Some(ending)
    }

    /// A run resumed from the checkpoint at an epoch's end asks the gate about that epoch
    /// first, with the figures its snapshot holds: a stop after the checkpoint and before the
    /// gate's answer was carried out (a trial at its rung, not yet paused) ends the run there,
    /// as it would have ended, not an epoch later.
    pub(super) fn gate_at_resume(
        &mut self,
        start: &CheckpointState,
    ) -> Result<Option<Ending>, Error> {
        if self.resume.is_none() || self.gate.is_none() || start.step_in_epoch > 0 {
            return Ok(None);
        }
        let snapshots = read_snapshots(self.guard.recorder().snapshots_path())?;
        let epochs = current_epochs(&snapshots);
        let Some(at) = epochs.iter().rfind(|s| s.epoch == start.epoch) else {
            return Ok(None);
        };
        let figures = EpochFigures {
            val_loss: at.val_loss,
            metrics: (at.metrics.iter())
                .filter_map(|(key, value)| value.map(|v| (key.clone(), v)))
                .collect(),
            ..EpochFigures::default()
        };
        Ok(self.gate(start.epoch, &figures))
    }
}

/// Validation's loss and `val_<name>` metrics as an epoch's figures (none without a
/// validation split).
fn validation_figures(validation: Option<Means>) -> EpochFigures {
    let Some((val_loss, metrics)) = validation else {
        return EpochFigures::default();
    };
    EpochFigures {
        val_loss: Some(val_loss),
        metrics: (metrics.into_iter())
            .map(|(k, v)| (format!("val_{k}"), v))
            .collect(),
        ..EpochFigures::default()
    }
}
