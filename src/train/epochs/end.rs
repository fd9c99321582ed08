//! The end of an epoch: its figures, validation, the snapshot, then the decisions (is this the
//! best epoch? stop now?) carried out in its checkpoint; and the end of the run.

use std::collections::BTreeMap;

use super::pass::Tally;
use super::setup::Run;
use super::Epochs;
use crate::config::{ConfigError, Monitor};
use crate::error::{Error, TrainingError};
use crate::record::{current_epochs, read_snapshots};
use crate::task::metrics::Means;
use crate::task::Task;
use crate::train::checkpoint::CheckpointState;
use crate::train::decide::Verdict;
use crate::train::gate::{Ending, Gate};
use crate::train::EpochFigures;

/// An epoch's training and validation figures.
struct Figures {
    val_loss: Option<f64>,
    /// `train_<name>` and `val_<name>`.
    metrics: BTreeMap<String, f64>,
}

impl<T: Task> Epochs<'_, T> {
    /// Ends epoch `epoch`; returns whether the run ends here: `Completed` where early stopping
    /// ends it (or it goes on), `Paused` or `Pruned` where the gate stops it.
    pub(super) fn end_epoch(
        &mut self,
        run: &mut Run<T>,
        epoch: usize,
        tally: Tally,
    ) -> Result<Option<Ending>, Error> {
        let clipped = tally.clipped()?;
        let samples = tally.sums.samples();
        let trained = (samples - tally.restored_samples) as f64;
        let samples_per_sec = trained / tally.started.elapsed().as_secs_f64().max(1e-9);
        let (loss, train_metrics) = tally
            .sums
            .finish()
            .map_err(Error::device)?
            .unwrap_or((f64::NAN, BTreeMap::new()));
        // The in-epoch check reads the loss about once a second; this one sees every step.
        if samples > 0 && !loss.is_finite() {
            return Err(TrainingError::Diverged {
                epoch,
                step: self.stats.steps,
                loss,
            }
            .into());
        }
        // Validation in its own window, so that the limit is checked against what it held
        // (the epoch's peak also holds any attempt that shrank).
        self.guard.open_window();
        let validation = self.validate(run)?;
        let window = self.guard.peek_window();
        let figures = Figures::new(train_metrics, validation);
        self.stats
            .epoch(epoch, loss, figures.val_loss, samples_per_sec);
        self.stats.loss_scale = run.precision.scaler().map(|s| s.scale());
        self.stats.clipped_steps += clipped;
        self.guard.epoch_snapshot(
            self.recorder,
            epoch,
            EpochFigures {
                loss: Some(loss),
                val_loss: figures.val_loss,
                samples_per_sec: Some(samples_per_sec),
                loss_scale: run.precision.scaler().map(|s| (s.scale(), tally.skipped)),
                lr: Some(run.schedule.current()),
                clipped_steps: run.clip.map(|_| clipped),
                metrics: figures.metrics.clone(),
                // As `"auto"` offload left it.
                footprint: self.guard.footprint().or(Some(run.footprint)),
            },
        )?;
        crate::failpoint::pass("snapshot");
        let verdict = self.decide(run, epoch, &figures)?;
        let state = self.state(run, epoch);
        self.checkpoint(run, state, verdict == Some(Verdict::Improved))?;
        crate::failpoint::pass("checkpoint");
        (self.guard).close_epoch(self.recorder, epoch, &window)?;
        if verdict == Some(Verdict::Stop) {
            return Ok(Some(Ending::Completed));
        }
        Ok(self.gate(epoch, &figures))
    }

    /// The gate's word on epoch `epoch` (none on the last), told to the user where it stops
    /// the run.
    fn gate(&mut self, epoch: usize, figures: &Figures) -> Option<Ending> {
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
        self.recorder.tell(&message);
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
        let snapshots = read_snapshots(self.recorder.snapshots_path())?;
        let epochs = current_epochs(&snapshots);
        let Some(at) = epochs.iter().rfind(|s| s.epoch == start.epoch) else {
            return Ok(None);
        };
        let figures = Figures {
            val_loss: at.val_loss,
            metrics: (at.metrics.iter())
                .filter_map(|(key, value)| value.map(|v| (key.clone(), v)))
                .collect(),
        };
        Ok(self.gate(start.epoch, &figures))
    }

    /// Early stopping's verdict on epoch `epoch`, with the stop told to the user.
    fn decide(
        &mut self,
        run: &mut Run<T>,
        epoch: usize,
        figures: &Figures,
    ) -> Result<Option<Verdict>, Error> {
        let Some(early) = &mut run.early_stop else {
            return Ok(None);
        };
        let monitor = early.config().monitor.clone();
        let value = figures
            .get(&monitor)
            .ok_or_else(|| unknown_monitor(&monitor, figures))?;
        let verdict = early.observe(epoch, value);
        if verdict == Verdict::Stop {
            let (best_epoch, best) = early.state().best.unwrap_or((0, f64::NAN));
            let message = format!(
                "early stopping: {monitor} has not improved for {} epochs (best {best:.4} at \
                 epoch {best_epoch}); stopping after epoch {epoch}",
                early.state().waited
            );
            self.recorder.tell(&message);
        }
        Ok(Some(verdict))
    }

    /// At the run's end: the statistics keep early stopping's outcome and, after a run that
    /// `completed`, the user is told which weights it ends on.
    pub(super) fn finish(&mut self, run: &Run<T>, completed: bool) {
        let Some(early) = &run.early_stop else {
            return;
        };
        self.stats.early_stop = Some((early.config().clone(), early.state().clone()));
        let best = early.state().best.filter(|_| completed);
        if let (true, Some((epoch, value))) = (early.config().restore_best, best) {
            let message = format!(
                "best epoch {epoch} ({} {value:.4}): the run's final weights, in \
                 checkpoints/best",
                early.config().monitor
            );
            self.recorder.tell(&message);
        }
    }
}

impl Figures {
    fn new(train_metrics: BTreeMap<String, f64>, validation: Option<Means>) -> Self {
        let mut metrics: BTreeMap<String, f64> = train_metrics
            .into_iter()
            .map(|(k, v)| (format!("train_{k}"), v))
            .collect();
        let val_loss = validation.map(|(val_loss, val_metrics)| {
            metrics.extend(
                val_metrics
                    .into_iter()
                    .map(|(k, v)| (format!("val_{k}"), v)),
            );
            val_loss
        });
        Self { val_loss, metrics }
    }

    /// A validation figure by its snapshot key: `val_loss` or a metric's.
    fn get(&self, key: &str) -> Option<f64> {
        Monitor::value_of(key, self.val_loss, |key| self.metrics.get(key).copied())
    }

    /// The keys early stopping may watch.
    fn validation_keys(&self) -> Vec<String> {
        let metrics = (self.metrics.keys()).filter(|k| crate::config::Monitor::is_validation(k));
        self.val_loss
            .map(|_| "val_loss".to_string())
            .into_iter()
            .chain(metrics.cloned())
            .collect()
    }
}

fn unknown_monitor(monitor: &str, figures: &Figures) -> Error {
    Error::Config(ConfigError {
        origin: "[train.early_stopping]".into(),
        key: Some("train.early_stopping.monitor".into()),
        message: crate::task::unknown_monitor(
            "train.early_stopping.monitor",
            monitor,
            &figures.validation_keys(),
        ),
    })
}
