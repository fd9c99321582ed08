//! Validation after each epoch, on the model in inference mode.

use burn::module::Module;

use super::setup::{Loader, Run};
use super::{loader_error, Epochs};
use crate::data::DataError;
use crate::error::Error;
use crate::task::metrics::Means;
use crate::task::{MetricSums, Task};
use crate::train::step::micro_batches;

impl<T: Task> Epochs<'_, T> {
    /// Mean loss and metrics over the validation split, if the task has one.
    pub(super) fn validate(&mut self, run: &Run<T>) -> Result<Option<Means>, Error> {
        let Some(loader) = &run.valid_loader else {
            return Ok(None);
        };
        self.validate_on(run, loader).map(Some)
    }

    fn validate_on(&mut self, run: &Run<T>, loader: &Loader<T>) -> Result<Means, Error> {
        let model = run.precision.compute_model(&run.model().valid());
        let cx = run.precision.compute();
        let mut sums = MetricSums::default();
        // In micro-batches, like training: a limit that shrank the training step holds for
        // validation too.
        let micro = self.governor.layout().micro_batch();
        for items in loader.iter() {
            let items = items.map_err(loader_error)?;
            for chunk in micro_batches(&mut vec![items], micro, false) {
                let n = chunk.len();
                let batch = self.task.batcher().batch(chunk, self.device);
                let out = self.task.valid_step(&model, batch, &cx);
                sums.add(out.loss, out.metrics, n);
            }
        }
        sums.finish()
            .map_err(Error::device)?
            .ok_or_else(|| Error::Data(DataError::Unusable("the validation split is empty".into())))
    }
}
