//! `[train.early_stopping]` in a hand loop, as the trainer does it (the learner judges each
//! epoch): after each epoch the monitor is read from the figures the loop gives, an
//! improvement makes that epoch's checkpoint `checkpoints/best`, and a run out of patience
//! stops: the loop asks [`HandLoop::stopped_early`], and a step after the stop is an error.
//! Patience carries across a resume in the checkpoint.

use burn::module::Module;

use super::HandLoop;
use crate::error::Error;
use crate::train::EpochFigures;

impl<M: Module + 'static> HandLoop<M> {
    /// Whether early stopping has ended the run: the loop trains no further epoch, and
    /// [`finish`](Self::finish) writes the summary.
    pub fn stopped_early(&self) -> bool {
        self.learner.stopped_early()
    }

    /// Checks that `figures` give the monitor early stopping watches, before anything of the
    /// epoch is taken: an error names the call that gives it.
    pub(super) fn check_monitored(&self, figures: &EpochFigures) -> Result<(), Error> {
        self.learner.monitored(figures).map(|_| ())
    }
}
