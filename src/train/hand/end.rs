//! The end of a hand loop's epoch, made by the run's learner as the trainer's are (its
//! snapshot, with the figures the loop gives and those the steps counted, early stopping's
//! verdict, then its checkpoint); and of its run (the release, `memory.svg` and
//! `summary.json`).

use burn::module::Module;

use super::HandLoop;
use crate::error::Error;
use crate::error::TrainingError;
use crate::record::{RunStatus, RunSummary};
use crate::train::stats::Identity;
use crate::train::trainer::draw;
use crate::train::EpochFigures;

impl<M: Module + 'static> HandLoop<M> {
    /// Ends the epoch the steps are in: its snapshot, with `figures` (the loop's validation
    /// loss and metrics, from [`validate`](Self::validate) or its own) and what the steps
    /// counted (the mean training loss and metrics, samples per second, the learning rate,
    /// loss scaling and clipping), early stopping's verdict, then its checkpoint, from which
    /// the run resumes exactly. An error before any step of the epoch.
    pub fn end_epoch(&mut self, figures: EpochFigures) -> Result<(), Error> {
        self.end_open_epoch(figures, true)
    }

    /// Ends the open epoch; `judged` by early stopping (an epoch `finish` ends has no figures
    /// of the loop's to judge).
    fn end_open_epoch(&mut self, figures: EpochFigures, judged: bool) -> Result<(), Error> {
        if let Some(e) = &self.failed {
            return Err(super::step::stopped(e));
        }
        if !self.open {
            let epoch = self.epoch;
            return Err(TrainingError::EpochWithoutStep { epoch }.into());
        }
        // Before anything of the epoch is taken: an error here leaves it open as it was.
        if judged {
            self.check_monitored(&figures)?;
        }
        let closed = self.close(figures, judged);
        // The epoch's tally is taken: after an error, the run cannot go on (nor end the epoch
        // again).
        if let Err(e) = &closed {
            self.failed = Some(e.to_string());
        }
        closed
    }

    /// Ends the open epoch through the learner, as the trainer's ends.
    fn close(&mut self, figures: EpochFigures, judged: bool) -> Result<(), Error> {
        let tally = std::mem::take(&mut self.tally);
        let (epoch, step) = (self.epoch, self.stats.steps);
        let trained = self.learner.trained(tally, (epoch, step))?;
        // What validation held, or the epoch's end since its last step.
        let window = match self.validated.take() {
            Some(window) => window,
            None => self.guard.read_window()?,
        };
        let books = (&mut self.guard, &mut self.stats);
        let at = (epoch, judged);
        (self.learner).close_epoch(books, &self.checkpointer, at, trained, figures, &window)?;
        self.open = false;
        Ok(())
    }

    /// Ends the run: the open epoch, if the loop left one; then, with the model and the
    /// optimizer's state dropped, the release and its check, `memory.svg`, and `summary.json`,
    /// which it returns. The trained weights are in the last checkpoint (in `checkpoints/best`
    /// with early stopping's `restore_best`).
    /// After a failed step, the summary says `failed` with its error, and the epoch it was in
    /// is not checkpointed (the last checkpoint stays).
    pub fn finish(mut self) -> Result<RunSummary, Error> {
        if self.open && self.failed.is_none() {
            self.end_open_epoch(EpochFigures::default(), false)?;
        }
        let completed = self.failed.is_none();
        (self.learner).finish(&mut self.guard, &mut self.stats, completed);
        self.learner.drop_tensors(&self.config.train);
        let ended = self.guard.run_end(self.stats.epochs);
        draw(&mut self.guard, &self.config, &self.config.run.name);
        let status = match (&self.failed, &ended) {
            (Some(e), _) => RunStatus::Failed(e.clone()),
            (None, Ok(_)) => RunStatus::Completed,
            (None, Err(e)) => RunStatus::Failed(e.to_string()),
        };
        let id = Identity {
            name: self.config.run.name.clone(),
            run_dir: self.run_dir.clone(),
            task: self.task.clone(),
            backend: self.config.device.backend,
            execution: crate::backend::execution(&self.config.device)?,
            precision: self.config.train.precision,
            baselines: Default::default(),
        };
        let wall = self.started.elapsed().as_secs_f64();
        let summary = self.stats.summary(id, &self.guard, status, wall);
        let path = self.run_dir.join("summary.json");
        let json = serde_json::to_vec_pretty(&summary).expect("summaries serialise");
        crate::record::write_atomic(&path, &json).map_err(|e| Error::io(&path, e))?;
        ended.map(|_| summary)
    }
}
