//! The end of an epoch, as every loop ends it: the steps' figures taken from the epoch's
//! [`Tally`] (`trained`), then (`close_epoch`) the epoch's snapshot with those and the loop's
//! own figures (validation's), early stopping's verdict, the epoch's checkpoint (which becomes
//! `checkpoints/best` where the epoch improved), and the limit's check of the epoch's end.

use std::collections::BTreeMap;

use burn::module::Module;

use super::{Learner, Tally};
use crate::error::{Error, TrainingError};
use crate::memory::MemoryUsage;
use crate::train::checkpoint::{Checkpointer, Marks};
use crate::train::decide::{EarlyStop, Verdict};
use crate::train::recorder::RunRecorder;
use crate::train::stats::Stats;
use crate::train::{EpochFigures, MemoryGuard};

/// What an epoch's steps add up to, read from the device.
pub(in crate::train) struct StepFigures {
    /// The mean training loss (NaN for an epoch without steps).
    loss: f64,
    /// The steps' metrics by name, weighted by samples.
    metrics: BTreeMap<String, f64>,
    samples_per_sec: f64,
    clipped: u64,
    skipped: u64,
    pace: Option<crate::record::Pace>,
}

impl<M: Module> Learner<M> {
    /// Epoch `epoch`'s figures from its steps' `tally`; an error where its loss is not finite
    /// (`step`: the run's last step).
    pub(in crate::train) fn trained(
        &self,
        tally: Tally,
        (epoch, step): (usize, usize),
    ) -> Result<StepFigures, Error> {
        let clipped = tally.clipped()?;
        let pace = tally.step_pace();
        let samples = tally.sums.samples();
        let timed = (samples - tally.restored_samples) as f64;
        // Over the epoch's steps, from its first step's start to its last one's end: not its
        // validation, nor its end (the snapshot and checkpoint to come).
        let trained_for = tally.last_step_end.saturating_duration_since(tally.started);
        let samples_per_sec = timed / trained_for.as_secs_f64().max(1e-9);
        let (loss, metrics) = (tally.sums.finish())
            .map_err(Error::device)?
            .unwrap_or((f64::NAN, BTreeMap::new()));
        if samples > 0 && !loss.is_finite() {
            return Err(TrainingError::Diverged { epoch, step, loss }.into());
        }
        Ok(StepFigures {
            loss,
            metrics,
            samples_per_sec,
            clipped,
            skipped: tally.skipped,
            pace,
        })
    }

    /// Ends epoch `epoch` (`judged` by early stopping, unless an epoch ended without the
    /// loop's figures): `figures` (the loop's: validation's loss and `val_<name>` metrics,
    /// or any figure it sets itself) completed with what its steps counted (`trained`: the
    /// loss, `train_<name>`, samples per second, the rate, loss scaling, clipping), then its
    /// snapshot, early stopping's verdict, its checkpoint, and the limit's check of
    /// `window` (what the epoch's end held: validation's window, or the last step's).
    pub(in crate::train) fn close_epoch(
        &mut self,
        (guard, rec, stats): (&mut MemoryGuard, &mut RunRecorder, &mut Stats),
        checkpointer: &Checkpointer,
        (epoch, judged): (usize, bool),
        trained: StepFigures,
        figures: EpochFigures,
        window: &MemoryUsage,
    ) -> Result<EpochFigures, Error> {
        let figures = self.complete(figures, &trained, guard);
        let monitored = match judged {
            true => self.monitored(&figures)?,
            false => None,
        };
        let val_loss = figures.val_loss;
        stats.epoch(epoch, trained.loss, val_loss, trained.samples_per_sec);
        stats.loss_scale = self.precision.scaler().map(|s| s.scale());
        stats.clipped_steps += trained.clipped;
        guard.epoch_snapshot(rec, epoch, figures.clone())?;
        crate::failpoint::pass("snapshot");
        let verdict = monitored.and_then(|value| self.decide(rec, epoch, value));
        if judged {
            self.plateau(rec, &figures)?;
        }
        let state = self.state(stats, guard, epoch);
        let marks = Marks {
            best: verdict == Some(Verdict::Improved),
            ranked: match (judged, checkpointer.ranks_by()) {
                (true, Some(figure)) => Some(ranked(figure, &figures)?),
                _ => None,
            },
        };
        self.checkpoint((guard, rec), checkpointer, &state, marks)?;
        crate::failpoint::pass("checkpoint");
        guard.close_epoch(rec, epoch, window)?;
        Ok(figures)
    }

    /// `figures` with what the loop left unset taken from the steps.
    fn complete(
        &self,
        mut figures: EpochFigures,
        trained: &StepFigures,
        guard: &MemoryGuard,
    ) -> EpochFigures {
        figures.loss = figures.loss.or(Some(trained.loss));
        for (name, value) in &trained.metrics {
            let key = format!("train_{name}");
            figures.metrics.entry(key).or_insert(*value);
        }
        figures.samples_per_sec = figures.samples_per_sec.or(Some(trained.samples_per_sec));
        figures.lr = figures.lr.or(Some(self.schedule.current()));
        figures.pace = figures.pace.or(trained.pace);
        let scale = (self.precision.scaler()).map(|s| (s.scale(), trained.skipped));
        figures.loss_scale = figures.loss_scale.or(scale);
        figures.clipped_steps = figures.clipped_steps.or(self.clip.map(|_| trained.clipped));
        // As `"auto"` offload left it.
        figures.footprint = figures.footprint.or(guard.footprint());
        figures
    }

    /// The value of the monitor early stopping watches in `figures`: `None` without
    /// `[train.early_stopping]`, an error where the figures do not give it.
    pub(in crate::train) fn monitored(&self, figures: &EpochFigures) -> Result<Option<f64>, Error> {
        let Some(early) = &self.early_stop else {
            return Ok(None);
        };
        let monitor = &early.config().monitor;
        let value = figures.get(monitor);
        value
            .map(Some)
            .ok_or_else(|| unknown_monitor(monitor, figures))
    }

    /// A plateau schedule's look at the epoch's `figures`: the rate drops from the next step
    /// where its figure has not improved for long enough, and the user is told.
    fn plateau(&mut self, rec: &mut RunRecorder, figures: &EpochFigures) -> Result<(), Error> {
        let Some(plateau) = self.schedule.watches() else {
            return Ok(());
        };
        let (figure, patience) = (plateau.monitor.clone(), plateau.patience.max(1));
        let value = figures
            .get(&figure)
            .ok_or_else(|| unknown_figure("train.schedule.monitor", &figure, figures))?;
        if let Some((old, new)) = self.schedule.observe(value) {
            let line = format!(
                "plateau: {figure} has not improved for {patience} epoch(s); lr {old:.3e} -> \
                 {new:.3e} from the next step"
            );
            rec.tell(&line);
        }
        Ok(())
    }

    /// Early stopping's verdict on epoch `epoch`, on the monitor's `value`, with the stop told
    /// to the user.
    fn decide(&mut self, rec: &mut RunRecorder, epoch: usize, value: f64) -> Option<Verdict> {
        let early = self.early_stop.as_mut()?;
        let verdict = early.observe(epoch, value);
        if verdict == Verdict::Stop {
            rec.tell(&stopping(early, epoch));
        }
        Some(verdict)
    }

    /// At the run's end: early stopping's outcome for the statistics and, after a run that
    /// `completed` with `restore_best`, the user told which weights it ends on.
    pub(in crate::train) fn finish(
        &self,
        rec: &mut RunRecorder,
        stats: &mut Stats,
        completed: bool,
    ) {
        let Some(early) = &self.early_stop else {
            return;
        };
        stats.early_stop = Some((early.config().clone(), early.state().clone()));
        let best = early.state().best.filter(|_| completed);
        if let (true, Some((epoch, value))) = (early.config().restore_best, best) {
            let message = format!(
                "best epoch {epoch} ({} {value:.4}): the run's final weights, in \
                 checkpoints/best",
                early.config().monitor
            );
            rec.tell(&message);
        }
    }
}

/// What the user is told at early stopping's stop.
fn stopping(early: &EarlyStop, epoch: usize) -> String {
    let (best_epoch, best) = early.state().best.unwrap_or((0, f64::NAN));
    format!(
        "early stopping: {} has not improved for {} epochs (best {best:.4} at epoch \
         {best_epoch}); stopping after epoch {epoch}",
        early.config().monitor,
        early.state().waited
    )
}

/// The error of a monitor that an epoch's figures do not give.
pub(in crate::train) fn unknown_monitor(monitor: &str, figures: &EpochFigures) -> Error {
    unknown_figure("train.early_stopping.monitor", monitor, figures)
}

/// The value of `figure`, which ranks the checkpoints `checkpoint.keep_best` keeps, in the
/// epoch's `figures`; an error where they do not give it.
fn ranked(figure: &str, figures: &EpochFigures) -> Result<f64, Error> {
    (figures.get(figure)).ok_or_else(|| unknown_figure("checkpoint.monitor", figure, figures))
}

/// The error of a watched `figure` (config `key`) that an epoch's figures do not give.
fn unknown_figure(key: &str, figure: &str, figures: &EpochFigures) -> Error {
    let given = figures.validation_keys();
    Error::Training(TrainingError::FigureMissing {
        key: key.into(),
        figure: figure.into(),
        given: match given.is_empty() {
            true => "none".into(),
            false => given.join(", "),
        },
    })
}
