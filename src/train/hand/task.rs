//! A hand loop over a [`Task`]: an epoch's loader batches in the trainer's order
//! ([`epoch_batches`](HandLoop::epoch_batches)), a step of the task's own
//! ([`step_task`](HandLoop::step_task)) and its validation
//! ([`validate_task`](HandLoop::validate_task)). The trainer's epochs are these calls.

use burn::data::dataloader::{DataLoader, DataLoaderIterator};
use burn::data::dataset::DatasetError;
use burn::module::Module;

use super::HandLoop;
use crate::data::DataError;
use crate::error::Error;
use crate::task::Task;
use crate::train::step::{micro_batches, micro_ranges, Items};
use crate::train::EpochFigures;

impl<M: Module + 'static> HandLoop<M> {
    /// The training batches of the epoch the next step opens, from `loader` (batches of
    /// `train.batch_size`, as [`item_loader`](crate::data::item_loader) makes them, seeded with
    /// `run.seed`), in groups of `train.accumulation_steps`: a group a step, in the trainer's
    /// order. Before a resumed run's first epoch the loader's order is replayed (an iteration
    /// started and dropped for each epoch done: the loader reshuffles at each), and the steps a
    /// checkpoint inside the epoch had done are passed over.
    pub fn epoch_batches<'a, I>(
        &mut self,
        loader: &'a dyn DataLoader<Vec<I>>,
    ) -> EpochBatches<'a, I> {
        if !std::mem::replace(&mut self.place.replayed, true) {
            for _ in 0..self.epoch {
                drop(loader.iter());
            }
        }
        let accumulation = self.config.train.accumulation_steps;
        EpochBatches {
            batches: loader.iter(),
            accumulation,
            skip: self.steps_done_in_epoch() * accumulation,
        }
    }

    /// One optimizer step of `task` over `group`, loader batches accumulated into one update:
    /// each batch cut into the micro-batches the limit allows, each micro-batch's items
    /// batched by the task's batcher on [`device`](Self::device) and stepped by its `step` in
    /// the run's precision, as [`step_batches`](Self::step_batches) steps them. Returns the
    /// step's mean loss where the step read it (about once a second, at the epoch's last
    /// step, and for a checkpoint: reading waits for the device), else `None`.
    pub fn step_task<T: Task<Model = M>>(
        &mut self,
        task: &T,
        group: Vec<Vec<T::Item>>,
    ) -> Result<Option<f64>, Error> {
        let sizes: Vec<usize> = group.iter().map(Vec::len).collect();
        // Only a step that may call its closure again for the same samples keeps its items;
        // the others move them out.
        let mut items = Items::new(group, self.retries_step());
        let (device, cx) = (self.learner.device.clone(), self.compute());
        let output = |model: &M, rows| {
            let batch = task.batcher().batch(items.take(rows), &device);
            task.step(model, batch, &cx)
        };
        // Its loss read where the run needs it, not at every step.
        Ok(self.step_as(&sizes, output, false)?.value)
    }

    /// Validation of `task` over `loader`'s batches (its validation split, in batches of
    /// `train.batch_size`): each batch cut into micro-batches as
    /// [`validate_batches`](Self::validate_batches) cuts them, batched on
    /// [`validation_device`](Self::validation_device) and scored by the task's `valid_step`.
    /// At a micro-batch below the loader's batch (a limit shrank or fit it), each
    /// micro-batch's items are read on their own, from a slice of the loader, so that
    /// validation holds no more of the data at once than a run at that batch size would.
    pub fn validate_task<T: Task<Model = M>>(
        &mut self,
        task: &T,
        loader: &dyn DataLoader<Vec<T::Item>>,
    ) -> Result<EpochFigures, Error> {
        let (device, cx) = (self.named.base_device.clone(), self.compute());
        let batch = self.config.train.batch_size;
        self.validate_as(|model, micro, sums| {
            let mut score = |loader: &dyn DataLoader<Vec<T::Item>>| {
                for items in loader.iter() {
                    let items = items.map_err(loader_error)?;
                    for part in micro_batches(&mut vec![items], micro, false) {
                        let n = part.len();
                        let batch = task.batcher().batch(part, &device);
                        let out = task.valid_step(model, batch, &cx);
                        sums.add(out.loss, out.metrics, n);
                    }
                }
                Ok(())
            };
            if micro >= batch {
                return score(loader);
            }
            // The micro-batches a batch of the loader's is cut into, each read alone: the
            // whole batch would be held while its micro-batches run (at a micro-batch of 1,
            // most of what validation holds above the run's rest).
            let items = loader.num_items();
            let batches: Vec<usize> = (0..items)
                .step_by(batch)
                .map(|start| batch.min(items - start))
                .collect();
            for rows in micro_ranges(&batches, micro) {
                score(loader.slice(rows.start, rows.end).as_ref())?;
            }
            Ok(())
        })
    }
}

/// An epoch's training batches in groups of a step each, in the trainer's order
/// ([`HandLoop::epoch_batches`]).
pub struct EpochBatches<'a, I> {
    batches: Box<dyn DataLoaderIterator<Vec<I>> + 'a>,
    accumulation: usize,
    /// Loader batches still to pass over (a resumed epoch's steps done).
    skip: usize,
}

impl<I> Iterator for EpochBatches<'_, I> {
    type Item = Result<Vec<Vec<I>>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.skip > 0 {
            self.skip -= 1;
            if let Err(e) = self.batches.next()? {
                return Some(Err(loader_error(e)));
            }
        }
        let mut group = Vec::with_capacity(self.accumulation);
        while group.len() < self.accumulation {
            match self.batches.next() {
                None => break,
                Some(Ok(batch)) => group.push(batch),
                Some(Err(e)) => return Some(Err(loader_error(e))),
            }
        }
        (!group.is_empty()).then_some(Ok(group))
    }
}

/// A loader's failure, as the run's data error.
fn loader_error(e: DatasetError) -> Error {
    Error::Data(DataError::Unusable(format!("data loader: {e}")))
}
