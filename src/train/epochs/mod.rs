//! The trainer's epochs: a [`HandLoop`] driven over a [`Task`]'s loaders in the loop's public
//! calls (`epoch_batches`, `step_task`, `validate_task`, `end_epoch`), as a hand-written loop
//! over a task takes them (docs/library.md), with what only the trainer adds: a search's gate
//! after each epoch (`gate`), and the memory advisor's probes after the run (`advise`,
//! `probe`).
//! Generic over the [`Task`]; nothing here knows a model kind.

mod advise;
mod probe;
mod search_gate;

use std::sync::Arc;

use burn::data::dataloader::DataLoader;

use super::hand::HandLoop;
use crate::error::Error;
use crate::record::RunSummary;
use crate::task::Task;
use crate::train::gate::{Ending, EpochGate};

/// Batches of items, as the loaders yield them.
pub(super) type Loader<T> = Arc<dyn DataLoader<Vec<<T as Task>::Item>>>;

/// One run's epochs.
pub(super) struct Epochs<'a, T: Task> {
    pub(super) task: &'a T,
    /// The run, opened.
    pub(super) run: HandLoop<T::Model>,
    pub(super) train_loader: Loader<T>,
    pub(super) valid_loader: Option<Loader<T>>,
    /// A search's pruner, asked after each epoch but the last.
    pub(super) gate: Option<EpochGate>,
}

impl<T: Task> Epochs<'_, T> {
    /// Trains every epoch still to do, or until early stopping ends the run, then ends it
    /// (its summary). A run that fails still records early stopping's outcome so far (its
    /// best checkpoint) for the summary. A run its gate pauses or prunes ends there, with
    /// its checkpoint and without advice.
    pub(super) fn train(mut self) -> Result<RunSummary, Error> {
        let ending = self.epochs();
        let result = match ending {
            Ok(Ending::Completed) => self.advise_run(Ok(())).map(|()| Ending::Completed),
            Ok(stopped) => Ok(stopped),
            Err(e) => self.advise_run(Err(e)).map(|()| Ending::Completed),
        };
        // The loaders go before the release: nothing of the run outlives it.
        let Epochs {
            run,
            train_loader,
            valid_loader,
            ..
        } = self;
        drop((train_loader, valid_loader));
        let (summary, result) = run.end_run(result)?;
        result.map(|_| summary)
    }

    /// The epochs, in the hand loop's public calls: a step of the task's for each group of
    /// the loader's batches, its validation, the epoch's end; then the gate's word.
    fn epochs(&mut self) -> Result<Ending, Error> {
        // Resumed after early stopping ended it (a stop before its summary): it ends there,
        // as early stopping's word comes before the gate's at an epoch's end.
        if self.run.stopped_early() {
            return Ok(Ending::Completed);
        }
        if let Some(ending) = self.gate_at_resume()? {
            return Ok(ending);
        }
        let (task, train) = (self.task, Arc::clone(&self.train_loader));
        for epoch in self.run.epochs() {
            for group in self.run.epoch_batches(train.as_ref()) {
                self.run.step_task(task, group?)?;
            }
            let figures = match &self.valid_loader {
                Some(valid) => self.run.validate_task(task, valid.as_ref())?,
                None => self.run.no_validation(),
            };
            let figures = self.run.end_epoch(figures)?;
            if self.run.stopped_early() {
                return Ok(Ending::Completed);
            }
            if let Some(ending) = self.gate(epoch, &figures) {
                return Ok(ending);
            }
        }
        Ok(Ending::Completed)
    }
}
