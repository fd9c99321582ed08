//! A search's gate after an epoch: its word on the epoch's figures, and, for a run resumed at
//! an epoch's end, on the figures that epoch's snapshot holds.

use super::Epochs;
use crate::error::Error;
use crate::record::{current_epochs, read_snapshots};
use crate::task::Task;
use crate::train::gate::{Ending, Gate};
use crate::train::EpochFigures;

impl<T: Task> Epochs<'_, T> {
    /// The gate's word on epoch `epoch` (none on the last), told to the user where it stops
    /// the run.
    pub(super) fn gate(&mut self, epoch: usize, figures: &EpochFigures) -> Option<Ending> {
        let epochs = self.run.config.train.epochs;
        let gate = self.gate.as_mut().filter(|_| epoch < epochs)?;
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
        self.run.rec.tell(&message);
        Some(ending)
    }

    /// A run resumed from the checkpoint at an epoch's end asks the gate about that epoch
    /// first, with the figures its snapshot holds: a stop after the checkpoint and before the
    /// gate's answer was carried out (a trial at its rung, not yet paused) ends the run there,
    /// as it would have ended, not an epoch later.
    pub(super) fn gate_at_resume(&mut self) -> Result<Option<Ending>, Error> {
        let run = &self.run;
        if !run.is_resumed() || self.gate.is_none() || run.steps_done_in_epoch() > 0 {
            return Ok(None);
        }
        let snapshots = read_snapshots(run.rec.snapshots_path())?;
        let epochs = current_epochs(&snapshots);
        let Some(at) = epochs.iter().rfind(|s| s.epoch == run.epoch) else {
            return Ok(None);
        };
        let figures = EpochFigures {
            val_loss: at.val_loss,
            metrics: (at.metrics.iter())
                .filter_map(|(key, value)| value.map(|v| (key.clone(), v)))
                .collect(),
            ..EpochFigures::default()
        };
        Ok(self.gate(run.epoch, &figures))
    }
}
