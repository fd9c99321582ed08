//! Scoring a model on data: the mean loss and the task's metrics over every item, through the
//! task's validation step. The epoch loop validates with it, and `tidemark evaluate` scores a
//! finished run with it.

use std::collections::BTreeMap;

use burn::data::dataset::Dataset;
use burn::tensor::Device;
use serde::Serialize;

use super::{Compute, MetricSums, Task};
use crate::data::DataError;
use crate::error::Error;

/// A model's mean loss and metrics over some data.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Score {
    /// Items scored.
    pub samples: usize,
    /// The sample-weighted mean loss.
    pub loss: f64,
    /// Each metric the task's validation step reports, by name (`accuracy`, `mae`, ...).
    pub metrics: BTreeMap<String, f64>,
}

/// Scores `model` on every item of `data`, `batch_size` items at a time, with
/// [`Task::valid_step`] in f32: the figures the run's validation reports, for any data.
///
/// `model` should be in inference mode: one built on a plain device and loaded from a
/// checkpoint, or a training model's `.valid()`.
///
/// ```no_run
/// # fn demo<T: tidemark::task::Task>(task: &T, model: &T::Model) -> Result<(), tidemark::Error> {
/// let device = burn::tensor::Device::flex();
/// let valid = task.data().valid.expect("a validation split");
/// let score = tidemark::task::evaluate(task, model, valid.as_ref(), 256, &device)?;
/// println!("loss {:.4} over {} samples, {:?}", score.loss, score.samples, score.metrics);
/// # Ok(()) }
/// ```
pub fn evaluate<T: Task>(
    task: &T,
    model: &T::Model,
    data: &dyn Dataset<T::Item>,
    batch_size: usize,
    device: &Device,
) -> Result<Score, Error> {
    let size = batch_size.max(1);
    let batches = (0..data.len())
        .step_by(size)
        .map(|start| items(data, start..(start + size).min(data.len())));
    score_batches(task, model, &Compute::f32(), device, batches)
}

/// The items of `data` at `range`, read from the dataset itself (no loader, no shuffling).
pub(crate) fn items<I>(
    data: &dyn Dataset<I>,
    range: std::ops::Range<usize>,
) -> Result<Vec<I>, Error> {
    range
        .map(|i| data.get(i))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::Data(DataError::Unusable(format!("data item: {e}"))))
}

/// Scores `model` on `batches` of items in the compute precision `cx`; an error if there are
/// none.
pub(crate) fn score_batches<T: Task>(
    task: &T,
    model: &T::Model,
    cx: &Compute,
    device: &Device,
    batches: impl IntoIterator<Item = Result<Vec<T::Item>, Error>>,
) -> Result<Score, Error> {
    let mut sums = MetricSums::default();
    for items in batches {
        let items = items?;
        let n = items.len();
        if n == 0 {
            continue;
        }
        let out = task.valid_step(model, task.batcher().batch(items, device), cx);
        sums.add(out.loss, out.metrics, n);
    }
    let samples = sums.samples();
    let (loss, metrics) = sums
        .finish()
        .map_err(Error::device)?
        .ok_or_else(|| Error::Data(DataError::Unusable("there is nothing to score".into())))?;
    Ok(Score {
        samples,
        loss,
        metrics,
    })
}
