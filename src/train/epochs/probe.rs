//! One probed step: the forward and backward passes of a step's first micro-batches, at a
//! micro-batch and under a model, device and precision that may differ from the run's, with
//! what it took measured in its own window. `fit` sizes the micro-batch with probes; the
//! advisor estimates its levers with them.
//!
//! A probe changes no weights (the gradients are dropped, never applied), draws nothing from
//! the loader (the items come from the dataset itself) and nothing that training draws later
//! (each step seeds the device's generator).

use burn::tensor::Device;

use super::setup::Run;
use super::Epochs;
use crate::error::Error;
use crate::memory::policy::held;
use crate::task::score::items;
use crate::task::Task;
use crate::train::precision::MixedPrecision;
use crate::train::step::{accumulate_gradients, SumPlace};

/// What a probed step runs with.
pub(super) struct StepUnder<'a, T: Task> {
    pub(super) model: &'a T::Model,
    pub(super) device: &'a Device,
    pub(super) precision: &'a MixedPrecision,
}

impl<'a, T: Task> StepUnder<'a, T> {
    /// The run's own model, device and precision.
    pub(super) fn run_as_configured(run: &'a Run<T>) -> Self {
        Self {
            model: run.model(),
            device: &run.learner.device,
            precision: &run.learner.precision,
        }
    }
}

/// What a probed step took.
#[derive(Debug, Clone, Copy)]
pub(super) struct Probed {
    /// Its peak as the limit reads it: in use on the host, reserved pages on CubeCL.
    pub(super) held: u64,
    /// Its peak in use above what was in use when it started.
    pub(super) transient: u64,
}

impl<T: Task> Epochs<'_, T> {
    /// The first items of the training data: two micro-batches' worth at the configured size.
    pub(super) fn probe_items(&self) -> Result<Vec<T::Item>, Error> {
        let train = self.task.data().train;
        let n = (2 * self.config.train.batch_size).min(train.len());
        items(train.as_ref(), 0..n)
    }

    /// A step at `micro_batch` under `at`, from what the run holds with the free pages of
    /// what ran before given back (as the limit reads it: reserved pages on CubeCL). With
    /// accumulation (`micro_steps` over one) the probe runs two micro-batches, so that the
    /// running sum and a micro-batch's own gradients are both counted.
    pub(super) fn probe(
        &mut self,
        at: &StepUnder<'_, T>,
        items: &[T::Item],
        micro_batch: usize,
        micro_steps: usize,
    ) -> Result<Probed, Error> {
        self.guard.release()?;
        self.probe_in_place(at, items, micro_batch, micro_steps)
    }

    /// [`probe`](Self::probe) without giving anything back first: its transient only.
    pub(super) fn probe_in_place(
        &mut self,
        at: &StepUnder<'_, T>,
        items: &[T::Item],
        micro_batch: usize,
        micro_steps: usize,
    ) -> Result<Probed, Error> {
        let start = self.guard.in_use()?;
        let group: Vec<Vec<T::Item>> = items
            .chunks(micro_batch.max(1))
            .take(micro_steps.min(2))
            .map(<[T::Item]>::to_vec)
            .collect();
        self.guard.open_window();
        let guard = &mut *self.guard;
        let place = SumPlace::from(guard.layout());
        let (task, model, device, precision) = (self.task, at.model, at.device, at.precision);
        let probed = accumulate_gradients(task, model, group, device, precision, place, || {
            guard.peek_window();
            Ok::<(), Error>(())
        })?;
        drop(probed);
        // After the device's queue, the figures of this probe's window alone.
        let window = self.guard.read_window()?;
        Ok(Probed {
            held: held(&window).0,
            transient: window.peak_bytes_in_use.saturating_sub(start),
        })
    }
}
