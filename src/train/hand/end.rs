//! The end of a hand loop's epoch (its snapshot, with the figures the loop gives and those the
//! steps counted, then its checkpoint), and of its run (the release, `memory.svg` and
//! `summary.json`).

use burn::module::Module;

use super::{HandLoop, Tally};
use crate::error::Error;
use crate::error::TrainingError;
use crate::record::{RunStatus, RunSummary};
use crate::train::build_optimizer;
use crate::train::checkpoint::CheckpointState;
use crate::train::stats::Identity;
use crate::train::trainer::draw;
use crate::train::{EpochFigures, Verdict};

impl<M: Module + 'static> HandLoop<M> {
    /// Ends the epoch the steps are in: its snapshot, with `figures` (the loop's validation
    /// loss and metrics) and what the steps counted (the mean training loss, samples per
    /// second, the learning rate, loss scaling and clipping), then its checkpoint, from which
    /// the run resumes exactly. An error before any step of the epoch.
    pub fn end_epoch(&mut self, figures: EpochFigures) -> Result<(), Error> {
        self.end_open_epoch(figures, true)
    }

    /// Ends the open epoch; with `decide`, early stopping judges it (an epoch `finish` ends
    /// has no figures of the loop's to judge).
    fn end_open_epoch(&mut self, mut figures: EpochFigures, decide: bool) -> Result<(), Error> {
        if let Some(e) = &self.failed {
            return Err(super::step::stopped(e));
        }
        if !self.open {
            let epoch = self.epoch;
            return Err(TrainingError::EpochWithoutStep { epoch }.into());
        }
        // Before anything of the epoch is taken: an error here leaves it open as it was.
        let monitored = match decide {
            true => self.monitored(&figures)?,
            false => None,
        };
        let mut tally = std::mem::take(&mut self.tally);
        let loss = tally.loss_sum / tally.samples.max(1) as f64;
        let seconds = tally.started.map_or(0.0, |s| s.elapsed().as_secs_f64());
        let samples_per_sec = tally.samples as f64 / seconds.max(1e-9);
        figures.loss = figures.loss.or(Some(loss));
        // The steps' metrics, as the trainer names them, unless the loop gave its own.
        let sums = std::mem::take(&mut tally.sums)
            .finish()
            .map_err(Error::device)?;
        let (_, train) = sums.unwrap_or_default();
        for (name, value) in train {
            figures
                .metrics
                .entry(format!("train_{name}"))
                .or_insert(value);
        }
        figures.samples_per_sec = figures.samples_per_sec.or(Some(samples_per_sec));
        figures.lr = figures.lr.or(Some(self.schedule.current()));
        figures.loss_scale = figures.loss_scale.or(scale(&self.precision, &tally));
        figures.clipped_steps = figures.clipped_steps.or(self.clip.map(|_| tally.clipped));
        // As `"auto"` offload left it.
        figures.footprint = figures.footprint.or(self.guard.footprint());
        let epoch = self.epoch;
        let verdict = monitored.and_then(|value| self.decide(epoch, value));
        let best = verdict == Some(Verdict::Improved);
        let model = (self.model.as_ref()).expect("the model is back after every update");
        let val_loss = figures.val_loss;
        self.stats.epoch(epoch, loss, val_loss, samples_per_sec);
        self.stats.clipped_steps += tally.clipped;
        self.stats.loss_scale = self.precision.scaler().map(|s| s.scale());
        let state = CheckpointState {
            epoch,
            step: self.stats.steps,
            layout_factor: self.guard.layout().factor,
            loss_scaler: self.precision.scaler().cloned(),
            skipped_steps: self.stats.skipped_steps,
            lr: Some(self.schedule.current()),
            clipped_steps: self.stats.clipped_steps,
            early_stop: self.early_stop.as_ref().map(|e| e.state().clone()),
            ..CheckpointState::default()
        };
        let (checkpointer, optimizer, schedule) =
            (&self.checkpointer, &self.optimizer, &self.schedule);
        (self.guard).epoch_end_checkpointed(&mut self.recorder, epoch, figures, || {
            checkpointer.save_run(&state, model, optimizer, Some(schedule), best)
        })?;
        self.open = false;
        Ok(())
    }

    /// Ends the run: the open epoch, if the loop left one; then, with the model and the
    /// optimizer's state dropped, the release and its check, `memory.svg`, and `summary.json`,
    /// which it returns. The trained weights are in the last checkpoint.
    /// After a failed step, the summary says `failed` with its error, and the epoch it was in
    /// is not checkpointed (the last checkpoint stays).
    pub fn finish(mut self) -> Result<RunSummary, Error> {
        if self.open && self.failed.is_none() {
            self.end_open_epoch(EpochFigures::default(), false)?;
        }
        // Early stopping's outcome for the summary: where it stopped, the best epoch, and
        // with `restore_best` the run's final weights in `checkpoints/best`.
        self.stats.early_stop =
            (self.early_stop.as_ref()).map(|e| (e.config().clone(), e.state().clone()));
        self.model = None;
        self.optimizer = build_optimizer(&self.config.train);
        self.master.reset();
        let ended = (self.guard).run_end(&mut self.recorder, self.stats.epochs);
        draw(
            (&self.guard, &mut self.recorder),
            &self.config,
            &self.config.run.name,
        );
        let status = match (&self.failed, &ended) {
            (Some(e), _) => RunStatus::Failed(e.clone()),
            (None, Ok(_)) => RunStatus::Completed,
            (None, Err(e)) => RunStatus::Failed(e.to_string()),
        };
        let id = Identity {
            name: self.config.run.name.clone(),
            run_dir: self.run_dir.clone(),
            task: "hand loop".into(),
            backend: self.config.device.backend,
            execution: crate::backend::execution(&self.config.device)?,
            precision: self.config.train.precision,
            baselines: Default::default(),
        };
        let wall = self.started.elapsed().as_secs_f64();
        let summary = self
            .stats
            .summary(id, (&self.guard, &self.recorder), status, wall);
        let path = self.run_dir.join("summary.json");
        let json = serde_json::to_vec_pretty(&summary).expect("summaries serialise");
        crate::record::write_atomic(&path, &json).map_err(|e| Error::io(&path, e))?;
        ended.map(|_| summary)
    }
}

/// With loss scaling: the scale now and the steps it skipped this epoch.
fn scale(precision: &crate::train::precision::MixedPrecision, tally: &Tally) -> Option<(f64, u64)> {
    precision.scaler().map(|s| (s.scale(), tally.skipped))
}
