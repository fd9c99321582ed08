//! One optimizer step over a group of loader batches: the items cut into the micro-batches
//! the limit allows and stepped by the run's [`Learner`](crate::train::learner::Learner), as a
//! hand loop's steps are.

use super::setup::Run;
use super::{Epochs, Position};
use crate::config::OnLimit;
use crate::error::Error;
use crate::task::Task;
use crate::train::learner::{StepLoss, Tally};
use crate::train::step::Items;

impl<T: Task> Epochs<'_, T> {
    /// Trains one optimizer step over `group` (emptied), and returns its loss (read, with
    /// `read`).
    pub(super) fn step(
        &mut self,
        run: &mut Run<T>,
        group: &mut Vec<Vec<T::Item>>,
        (at, read): (Position, bool),
        tally: &mut Tally,
    ) -> Result<StepLoss, Error> {
        // Only a step that a limit may retry (smaller, or with a part moved to host memory)
        // keeps its items for the retry; the others move them out.
        let shrinks = self.config.memory.on_limit == OnLimit::Shrink;
        let keep = shrinks || self.guard.layout().next_offload().is_some();
        let batches: Vec<usize> = group.iter().map(Vec::len).collect();
        let mut items = Items::new(std::mem::take(group), keep);
        let (task, device) = (self.task, &run.learner.device.clone());
        let cx = run.learner.precision.compute();
        let learner = &mut run.learner;
        learner.step(
            self.guard,
            (self.stats, tally),
            (at, read),
            &batches,
            |model, rows| {
                let batch = task.batcher().batch(items.take(rows), device);
                task.step(model, batch, &cx)
            },
        )
    }
}
