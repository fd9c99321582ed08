//! Validation after each epoch, on the model in inference mode.

use super::setup::{Loader, Run};
use super::{loader_error, Epochs};
use crate::error::Error;
use crate::task::metrics::Means;
use crate::task::score::score_batches;
use crate::task::Task;
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
        let precision = &run.learner.precision;
        let model = precision.compute_model(&run.learner.for_validation());
        // In micro-batches, like training: a limit that shrank the training step holds for
        // validation too.
        let micro = self.guard.layout().micro_batch();
        let batches = loader.iter().flat_map(|items| match items {
            Ok(items) => micro_batches(&mut vec![items], micro, false)
                .into_iter()
                .map(Ok)
                .collect(),
            Err(e) => vec![Err(loader_error(e))],
        });
        let score = score_batches(
            self.task,
            &model,
            &precision.compute(),
            self.device,
            batches,
        )?;
        Ok((score.loss, score.metrics))
    }
}
