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
use crate::memory::MemoryUsage;
use crate::task::score::items;
use crate::task::Task;
use crate::train::fit_plan::{FitTarget, Reading};
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
    /// Its peak in use above what was in use when it started.
    pub(super) transient: u64,
    /// Its window's figures.
    window: MemoryUsage,
    /// In use when it started.
    start: u64,
}

impl<T: Task> Epochs<'_, T> {
    /// The first items of the training data: two micro-batches' worth at the configured size.
    pub(super) fn probe_items(&self) -> Result<Vec<T::Item>, Error> {
        let train = self.task.data().train;
        let n = (2 * self.config.train.batch_size).min(train.len());
        items(train.as_ref(), 0..n)
    }

    /// `fit`'s probe of a step at `micro_batch` under `at` against `target`, from what the run
    /// holds with the free pages of what ran before given back (as the limit reads it:
    /// reserved pages on CubeCL). With accumulation (`micro_steps` over one) the probe runs
    /// two micro-batches, so that the running sum and a micro-batch's own gradients are both
    /// counted; it stops after the first where its figure already passes the target.
    pub(super) fn probe(
        &mut self,
        at: &StepUnder<'_, T>,
        items: &[T::Item],
        (micro_batch, micro_steps): (usize, usize),
        target: &FitTarget,
    ) -> Result<Reading, Error> {
        let to_come = self.guard.device_state();
        self.guard.release()?;
        let passed = |window: &MemoryUsage| target.passed(window, to_come);
        let (probed, stopped) = self.passes(at, items, (micro_batch, micro_steps), passed)?;
        Ok(Reading {
            window: probed.window,
            start: probed.start,
            state_to_come: to_come,
            stopped,
        })
    }

    /// A step's passes at `micro_batch` without giving anything back first: its transient
    /// only (the advisor's levers).
    pub(super) fn probe_in_place(
        &mut self,
        at: &StepUnder<'_, T>,
        items: &[T::Item],
        micro_batch: usize,
        micro_steps: usize,
    ) -> Result<Probed, Error> {
        let never = |_: &MemoryUsage| false;
        Ok(self.passes(at, items, (micro_batch, micro_steps), never)?.0)
    }

    /// The forward and backward passes of a step's first micro-batches (two at most) at
    /// `micro_batch` in a window of their own, stopped after the first micro-batch whose
    /// window `stop` says has passed; and whether it stopped.
    fn passes(
        &mut self,
        at: &StepUnder<'_, T>,
        items: &[T::Item],
        (micro_batch, micro_steps): (usize, usize),
        stop: impl Fn(&MemoryUsage) -> bool,
    ) -> Result<(Probed, bool), Error> {
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
        let probed =
            accumulate_gradients(task, model, group, device, precision, place, || match stop(
                &guard.peek_window(),
            ) {
                true => Err(()),
                false => Ok(()),
            });
        let stopped = probed.is_err();
        drop(probed);
        // After the device's queue, the figures of this probe's window alone.
        let window = self.guard.read_window()?;
        let probed = Probed {
            transient: window.peak_bytes_in_use.saturating_sub(start),
            window,
            start,
        };
        Ok((probed, stopped))
    }
}
