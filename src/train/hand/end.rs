//! The end of a hand loop's epoch, made by the run's learner as the trainer's are (its
//! snapshot, with the figures the loop gives and those the steps counted, early stopping's
//! verdict, then its checkpoint); and of its run (the release, `memory.svg` and
//! `summary.json`).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use burn::module::Module;

use super::{Failed, HandLoop, Named};
use crate::config::RunConfig;
use crate::error::{Error, TrainingError};
use crate::record::{write_atomic, RunStatus, RunSummary, Warning};
use crate::report::{draw_memory_svg, PictureOf};
use crate::train::gate::Ending;
use crate::train::recorder::RunRecorder;
use crate::train::stats::Identity;
use crate::train::{EpochFigures, MemoryGuard};

impl<M: Module + 'static> HandLoop<M> {
    /// Ends the epoch the steps are in: its snapshot, with `figures` (the loop's validation
    /// loss and metrics, from [`validate`](Self::validate) or its own) and what the steps
    /// counted (the mean training loss and metrics, samples per second, the learning rate,
    /// loss scaling and clipping), early stopping's verdict, then its checkpoint, from which
    /// the run resumes exactly. An error before any step of the epoch. Returns the epoch's
    /// figures as its snapshot has them (`figures`, with what the steps counted).
    pub fn end_epoch(&mut self, figures: EpochFigures) -> Result<EpochFigures, Error> {
        self.end_epoch_as(figures, true)
    }

    /// Ends the open epoch; `judged` by early stopping (an epoch `finish` ends has no figures
    /// of the loop's to judge). Returns the figures of its snapshot.
    fn end_epoch_as(&mut self, figures: EpochFigures, judged: bool) -> Result<EpochFigures, Error> {
        if let Some(failed) = &self.course.failed {
            return Err(super::step::stopped(&failed.message));
        }
        if !self.place.open {
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
            self.fail(e);
        }
        closed
    }

    /// Ends the open epoch through the learner.
    fn close(&mut self, figures: EpochFigures, judged: bool) -> Result<EpochFigures, Error> {
        let tally = std::mem::take(&mut self.place.tally);
        let (epoch, step) = (self.epoch, self.stats.steps);
        let trained = self.learner.trained(tally, (epoch, step))?;
        // What validation held, or the epoch's end since its last step.
        let window = match self.place.validated.take() {
            Some(window) => window,
            None => self.guard.readings().window()?,
        };
        let books = (&mut self.guard, &mut self.rec, &mut self.stats);
        let at = (epoch, judged);
        let closed =
            (self.learner).close_epoch(books, &self.checkpointer, at, trained, figures, &window)?;
        self.place.open = false;
        Ok(closed)
    }

    /// Ends the run: the open epoch, if the loop left one; then, with the model and the
    /// optimizer's state dropped, the release and its check, `memory.svg`, and `summary.json`,
    /// which it returns. The trained weights are in the last checkpoint (in `checkpoints/best`
    /// with early stopping's `restore_best`).
    /// After a failed step, the summary says `failed` with its error, and the epoch it was in
    /// is not checkpointed (the last checkpoint stays). A run stopped on request
    /// ([`Error::Interrupted`]) is left as a killed run is, without a summary.
    pub fn finish(mut self) -> Result<RunSummary, Error> {
        if self.place.open && self.course.failed.is_none() {
            self.end_epoch_as(EpochFigures::default(), false)?;
        }
        let outcome = match self.course.failed.take() {
            None => Outcome::Ended(Ok(Ending::Completed)),
            Some(Failed {
                interrupted: true, ..
            }) => Outcome::Ended(Err(Error::Interrupted)),
            // The loop had the step's error already.
            Some(Failed { message, .. }) => Outcome::Told(message),
        };
        let (summary, ended) = self.end_run_as(outcome)?;
        ended.map(|_| summary)
    }

    /// Ends the run whose epochs ended with `outcome`: the learner's last word (early
    /// stopping's best), the model and the optimizer's state dropped, the release and its
    /// check, `memory.svg`; then, but for a run stopped on request (whose error it returns),
    /// `summary.json`, which it returns with the run's outcome, the release's error first.
    pub(in crate::train) fn end_run(
        self,
        outcome: Result<Ending, Error>,
    ) -> Result<(RunSummary, Result<Ending, Error>), Error> {
        self.end_run_as(Outcome::Ended(outcome))
    }

    fn end_run_as(self, outcome: Outcome) -> Result<(RunSummary, Result<Ending, Error>), Error> {
        let completed = matches!(outcome, Outcome::Ended(Ok(Ending::Completed)));
        let HandLoop {
            learner,
            mut guard,
            mut rec,
            mut stats,
            config,
            named,
            clock,
            checkpointer,
            place,
            course,
            epoch,
            ..
        } = self;
        learner.finish(&mut rec, &mut stats, completed);
        // Nothing the run made outlives its release: the model, the optimizer and all that
        // updates them, the checkpointer and the epoch's figures.
        drop((learner, checkpointer, place));
        let Named {
            run_dir,
            task,
            baselines,
            ..
        } = named;
        let ended = guard.run_end(&mut rec, stats.epochs);
        draw((&guard, &mut rec), &config, &config.run.name);
        let (status, stopped_by, outcome) = match (outcome, ended) {
            (Outcome::Ended(Err(Error::Interrupted)), _) => {
                // Stopped on request: the run is left to be resumed, as a killed one would be.
                return Err(Error::Interrupted);
            }
            (Outcome::Told(message), ended) => {
                let ended = ended.map(|_| Ending::Completed);
                (RunStatus::Failed(message), None, ended)
            }
            // The epochs' error first, then the release's.
            (Outcome::Ended(Err(e)), _) | (Outcome::Ended(Ok(_)), Err(e)) => {
                (RunStatus::Failed(e.to_string()), None, Err(e))
            }
            (Outcome::Ended(Ok(ending)), Ok(_)) => {
                let (status, by) = match &ending {
                    Ending::Completed => (RunStatus::Completed, None),
                    Ending::Paused => (RunStatus::Paused, None),
                    Ending::Pruned(reason) => (RunStatus::Pruned, Some(reason.clone())),
                };
                (status, by, Ok(ending))
            }
        };
        let id = Identity {
            name: config.run.name.clone(),
            run_dir: run_dir.clone(),
            task,
            backend: config.device.backend,
            execution: crate::backend::execution(&config.device)?,
            precision: config.train.precision,
            baselines,
        };
        let wall = clock.earlier_s + clock.started.elapsed().as_secs_f64();
        let mut summary = stats.summary(id, (&guard, &rec), status, wall);
        summary.stopped_by = stopped_by;
        summary.run_in_process = RUNS_IN_PROCESS.fetch_add(1, Ordering::Relaxed) + 1;
        write_summary(&run_dir, &summary)?;
        // What the next run of its shape on this device asks for, and how long it holds it.
        if let (Some(lease), RunStatus::Completed) = (&course.lease, &summary.status) {
            lease.remember(epoch);
        }
        Ok((summary, outcome))
    }
}

/// How a run's epochs ended.
enum Outcome {
    Ended(Result<Ending, Error>),
    /// A step failed, and its error was the loop's: the summary says it.
    Told(String),
}

/// Writes `summary.json` in `run_dir`, whole or not at all.
fn write_summary(run_dir: &Path, summary: &RunSummary) -> Result<(), Error> {
    let path = run_dir.join("summary.json");
    let json = serde_json::to_vec_pretty(summary).expect("summaries serialise");
    crate::failpoint::pass("summary");
    write_atomic(&path, &json).map_err(|e| Error::io(&path, e))?;
    crate::failpoint::pass("summarised");
    Ok(())
}

/// Runs this process has finished, for each summary's `run_in_process`.
static RUNS_IN_PROCESS: AtomicUsize = AtomicUsize::new(0);

/// Draws `memory.svg` beside the run's `snapshots.jsonl`, from the snapshots on disk. A picture
/// that cannot be drawn is a warning, not an error: the snapshots it comes from are intact,
/// and `tidemark report RUN_DIR` can draw it again.
fn draw((guard, rec): (&MemoryGuard, &mut RunRecorder), config: &RunConfig, title: &str) {
    let of = PictureOf {
        title,
        limit: guard.limit_bytes(),
        monitor: config
            .train
            .early_stopping
            .as_ref()
            .map(|e| e.monitor.as_str()),
    };
    if let Err(e) = draw_memory_svg(rec.snapshots_path(), of) {
        let (path, cause) = (e.path, e.cause);
        rec.warn(&Warning::PictureNotDrawn { path, cause });
    }
}
