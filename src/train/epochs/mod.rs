//! The trainer's epochs: a [`HandLoop`] driven over a [`Task`]'s loaders, in the loop's own
//! calls (a step for each group of loader batches, validation, the epoch's end), with what
//! only a task's run has: the data order a resume replays (`mod.rs`), a search's gate after
//! each epoch (`gate`), and the memory advisor's probes after the run (`advise`, `probe`).
//! Generic over the [`Task`]; nothing here knows a model kind.

mod advise;
mod gate;
mod probe;

use std::sync::Arc;

use burn::data::dataloader::DataLoader;
use burn::data::dataset::DatasetError;

use super::hand::{HandLoop, StepAs};
use crate::data::DataError;
use crate::error::Error;
use crate::record::RunSummary;
use crate::task::Task;
use crate::train::decide::Verdict;
use crate::train::gate::{Ending, EpochGate};
use crate::train::step::{micro_batches, Items};
use crate::train::EpochFigures;

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

    fn epochs(&mut self) -> Result<Ending, Error> {
        // The data order of a resumed run: the loader reshuffles from one generator at each
        // epoch's start, so the epochs done are started (and dropped) again.
        for _ in 0..self.run.epoch {
            drop(self.train_loader.iter());
        }
        // Resumed after early stopping ended it (a stop before its summary): it ends there,
        // as early stopping's word comes before the gate's at an epoch's end.
        if self.run.stopped_early() {
            return Ok(Ending::Completed);
        }
        if let Some(ending) = self.gate_at_resume()? {
            return Ok(ending);
        }
        while self.run.epoch < self.run.config.train.epochs {
            let epoch = self.run.epoch + 1;
            self.pass()?;
            let figures = self.validate()?;
            let closed = self.run.end_epoch_as(figures, true)?;
            if closed.verdict == Some(Verdict::Stop) {
                return Ok(Ending::Completed);
            }
            if let Some(ending) = self.gate(epoch, &closed.figures) {
                return Ok(ending);
            }
        }
        Ok(Ending::Completed)
    }

    /// The next epoch's steps: the loader's batches in groups of `train.accumulation_steps`,
    /// a step each; a resumed epoch's first groups drawn and passed over.
    fn pass(&mut self) -> Result<(), Error> {
        let accumulation = self.run.config.train.accumulation_steps;
        let loader = Arc::clone(&self.train_loader);
        let mut batches = loader.iter();
        for _ in 0..self.run.steps_done_in_epoch() * accumulation {
            batches.next().transpose().map_err(loader_error)?;
        }
        let (task, device, cx) = (self.task, self.run.device().clone(), self.run.compute());
        let mut group = Vec::with_capacity(accumulation);
        loop {
            let next = batches.next().transpose().map_err(loader_error)?;
            let done = next.is_none();
            group.extend(next);
            if group.len() < accumulation && !done {
                continue;
            }
            if group.is_empty() {
                return Ok(());
            }
            let sizes: Vec<usize> = group.iter().map(Vec::len).collect();
            // Only a step that may call its closure again for the same samples keeps its
            // items; the others move them out.
            let mut items = Items::new(std::mem::take(&mut group), self.run.retries_step());
            let output = |model: &T::Model, rows| {
                let batch = task.batcher().batch(items.take(rows), &device);
                task.step(model, batch, &cx)
            };
            self.run.step_as(&sizes, output, StepAs { read: false })?;
            if done {
                return Ok(());
            }
        }
    }

    /// Validation's figures over the validation split (none without one), in micro-batches
    /// cut from each loader batch as the steps cut theirs.
    fn validate(&mut self) -> Result<EpochFigures, Error> {
        let Some(loader) = self.valid_loader.clone() else {
            return Ok(EpochFigures::default());
        };
        let (task, cx) = (self.task, self.run.compute());
        let device = self.run.validation_device().clone();
        let samples = self.run.stats.valid_samples;
        self.run.validate_as(samples, |model, micro, sums| {
            for items in loader.iter() {
                let items = items.map_err(loader_error)?;
                for part in micro_batches(&mut vec![items], micro, false) {
                    let n = part.len();
                    let out = task.valid_step(model, task.batcher().batch(part, &device), &cx);
                    sums.add(out.loss, out.metrics, n);
                }
            }
            Ok(())
        })
    }
}

fn loader_error(e: DatasetError) -> Error {
    Error::Data(DataError::Unusable(format!("data loader: {e}")))
}
