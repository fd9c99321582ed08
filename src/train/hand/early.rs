//! `[train.early_stopping]` in a hand loop, as the trainer does it: after each epoch the monitor
//! is read from the figures the loop gives, an improvement makes that epoch's checkpoint
//! `checkpoints/best`, and a run out of patience stops: the loop asks
//! [`HandLoop::stopped_early`], and a step after the stop is an error. Patience carries across
//! a resume in the checkpoint.

use burn::module::Module;

use super::HandLoop;
use crate::config::{ConfigError, Monitor};
use crate::error::Error;
use crate::train::{EarlyStop, EpochFigures, Verdict};

impl<M: Module + 'static> HandLoop<M> {
    /// Whether early stopping has ended the run: the loop trains no further epoch, and
    /// [`finish`](Self::finish) writes the summary.
    pub fn stopped_early(&self) -> bool {
        self.stopped_early
    }

    /// The value of the monitor early stopping watches in `figures`: `None` without
    /// `[train.early_stopping]`, an error where the figures do not give it.
    pub(super) fn monitored(&self, figures: &EpochFigures) -> Result<Option<f64>, Error> {
        let Some(early) = &self.early_stop else {
            return Ok(None);
        };
        let monitor = &early.config().monitor;
        let value = Monitor::value_of(monitor, figures.val_loss, |key| {
            figures.metrics.get(key).copied()
        });
        value.map(Some).ok_or_else(|| missing(monitor, figures))
    }

    /// Early stopping's verdict on the epoch just ended, on the monitor's `value` (from
    /// [`monitored`](Self::monitored)); the stop told to the user.
    pub(super) fn decide(&mut self, epoch: usize, value: f64) -> Option<Verdict> {
        let early = self.early_stop.as_mut()?;
        let verdict = early.observe(epoch, value);
        if verdict == Verdict::Stop {
            self.stopped_early = true;
            let message = stopping(early, epoch);
            self.recorder.tell(&message);
        }
        Some(verdict)
    }
}

/// What the user is told at the stop.
fn stopping(early: &EarlyStop, epoch: usize) -> String {
    let (best_epoch, best) = early.state().best.unwrap_or((0, f64::NAN));
    format!(
        "early stopping: {} has not improved for {} epochs (best {best:.4} at epoch \
         {best_epoch}); stopping after epoch {epoch}",
        early.config().monitor,
        early.state().waited
    )
}

/// The error of a monitor the loop's figures do not give.
fn missing(monitor: &str, figures: &EpochFigures) -> Error {
    let given: Vec<String> = (figures.val_loss.map(|_| "val_loss".to_string()))
        .into_iter()
        .chain(
            figures
                .metrics
                .keys()
                .filter(|k| Monitor::is_validation(k))
                .cloned(),
        )
        .collect();
    Error::Config(ConfigError {
        origin: "[train.early_stopping]".into(),
        key: Some("train.early_stopping.monitor".into()),
        message: format!(
            "{}; the loop's EpochFigures give it with HandLoop::end_epoch",
            crate::task::unknown_monitor("train.early_stopping.monitor", monitor, &given)
        ),
    })
}
