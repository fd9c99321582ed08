//! One probed step for the advisor: the forward and backward passes of a step's first
//! micro-batches, at a micro-batch and under a model, device and precision that may differ
//! from the run's, with what it took measured in its own window.
//!
//! A probe changes no weights (the gradients are dropped, never applied), draws nothing from
//! the loader (the items come from the dataset itself) and nothing that training draws later
//! (each step seeds the device's generator).

use burn::tensor::Device;

use crate::error::Error;
use crate::task::score::items;
use crate::task::Task;
use crate::train::precision::MixedPrecision;
use crate::train::step::{accumulate_gradients, SumPlace};
use crate::train::MemoryGuard;

/// What a probed step runs with.
pub(super) struct StepUnder<'a, M> {
    pub(super) model: &'a M,
    pub(super) device: &'a Device,
    pub(super) precision: &'a MixedPrecision,
}

/// The first items of `task`'s training data: two micro-batches' worth at `batch_size`.
pub(super) fn probe_items<T: Task>(task: &T, batch_size: usize) -> Result<Vec<T::Item>, Error> {
    let train = task.data().train;
    let n = (2 * batch_size).min(train.len());
    items(train.as_ref(), 0..n)
}

/// The transient of a step of `task` at `micro_batch` (its first `micro_steps` micro-batches,
/// two at most) under `at`, above what was in use when it started, without giving anything
/// back first.
pub(super) fn transient<T: Task>(
    guard: &mut MemoryGuard,
    task: &T,
    at: &StepUnder<'_, T::Model>,
    items: &[T::Item],
    (micro_batch, micro_steps): (usize, usize),
) -> Result<u64, Error> {
    let start = guard.readings().in_use()?;
    let group: Vec<Vec<T::Item>> = items
        .chunks(micro_batch.max(1))
        .take(micro_steps.min(2))
        .map(<[T::Item]>::to_vec)
        .collect();
    guard.readings().open_window();
    let place = SumPlace::from(guard.layout());
    let probed = accumulate_gradients(
        task,
        at.model,
        group,
        at.device,
        at.precision,
        place,
        || Ok::<(), ()>(()),
    );
    drop(probed);
    // After the device's queue, the figures of this probe's window alone.
    let window = guard.readings().window()?;
    Ok(window.peak_bytes_in_use.saturating_sub(start))
}
