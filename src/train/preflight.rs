//! One probed step of a config before it trains: its model, the forward and backward passes of
//! its first micro-batch (two when it accumulates) on the first items of its data, and one
//! optimizer update, with the peak they reached. A search probes each trial this way before
//! the first trains, to train the largest first ([`crate::sweep`]).
//!
//! A probe changes nothing a run draws: the run seeds its model and every step itself, and its
//! loader shuffles from its own seed.

use burn::tensor::Device;

use super::before_run::check_precision;
use super::hand::{empty_training_split, seeded_model};
use super::optimizer::build_optimizer;
use super::precision::MixedPrecision;
use super::step::{accumulate_gradients, apply_gradients, footprint, Clip, HostMaster, SumPlace};
use crate::backend;
use crate::config::RunConfig;
use crate::error::Error;
use crate::memory::policy::StepFigures;
use crate::memory::{Executor, MemoryMeter, MemorySource};
use crate::task::score::items;
use crate::task::Task;

/// What a probe of one step measured, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProbedStep {
    /// In use when the step started: the process's state and the data it trains on.
    pub before: u64,
    /// What a step of the run peaks at above `before`, in the one model of a step's need
    /// ([`StepFigures::peak`]): the model's weights, the forward and backward passes'
    /// activations and the gradients beside the optimizer's state (which every step after the
    /// first holds through its passes), or the update, whichever is more; not the one-time
    /// state the step leaves in the process.
    pub step: u64,
    /// What a checkpoint copies at once: the weights and the optimizer's state, from their
    /// shapes.
    pub checkpoint: u64,
    /// On a device with pools, what they reserved by the step's end: the figure a limit reads
    /// there.
    pub reserved: Option<u64>,
}

impl ProbedStep {
    /// Its figures, as a lease is sized from them ([`crate::memory::policy::lease_for`]).
    pub(crate) fn measured(&self) -> crate::memory::policy::Measured {
        crate::memory::policy::Measured {
            before: self.before,
            step: self.step,
            checkpoint: self.checkpoint,
            reserved: self.reserved,
        }
    }

    /// The memory lease a run with these figures takes: a search's trial in parallel.
    pub(crate) fn lease(&self) -> u64 {
        crate::memory::policy::lease_for(self.measured())
    }
}

/// Gives the process the one-time state a run's warm-up gives it (on flex, a packing buffer
/// for every rayon worker), so that what a probe finds in use before its step includes what
/// a fresh process running the trial would hold ([`crate::memory::Executor::warm_up`]).
pub(crate) fn warm_up(config: &RunConfig) -> Result<(), Error> {
    let device = backend::select(&config.device)?;
    let source = MemoryMeter::new(&device).source();
    Executor::new(&device, source)
        .warm_up(true)
        .map_err(Error::device)
}

/// One step of `task` under `config`, probed. Its memory is given back before it returns,
/// whether the step ran or not.
pub(crate) fn probe_task<T: Task>(task: &T, config: &RunConfig) -> Result<ProbedStep, Error> {
    let device = backend::select(&config.device)?;
    check_precision(config, &device, task)?;
    let train = &config.train;
    let autodiff = match train.gradient_checkpointing {
        true => device.clone().autodiff().gradient_checkpointing(),
        false => device.clone().autodiff(),
    };
    let mut meter = MemoryMeter::new(&device);
    let start = meter.read().map_err(Error::device)?.bytes_in_use;
    meter.reset_peak();
    let peak = step_peak(task, config, &autodiff, &mut meter);
    // Given back whether the step ran or not.
    let cleaned = Executor::new(&device, meter.source()).cleanup();
    let ((figures, reserved), checkpoint) = peak?;
    cleaned.map_err(Error::device)?;
    // What the step left in use for good is the process's one-time state (the first product
    // of a shape sizes buffers the backend keeps), not the step's.
    let end = meter.read().map_err(Error::device)?.bytes_in_use;
    Ok(ProbedStep {
        before: start,
        step: figures.peak().saturating_sub(start.max(end)),
        checkpoint,
        reserved,
    })
}

/// The model, then one step (its micro-batches and the update), with the peaks in use of its
/// passes and of its update and, on pools, what the pools reserved by its end (pages stay
/// reserved until a cleanup); and what a checkpoint of the model and its optimizer copies.
fn step_peak<T: Task>(
    task: &T,
    config: &RunConfig,
    device: &Device,
    meter: &mut MemoryMeter,
) -> Result<((StepFigures, Option<u64>), u64), Error> {
    let train = &config.train;
    let model = seeded_model(task, config.run.seed, device)?;
    let shapes = footprint(&model, train, None);
    let checkpoint = shapes.weights + shapes.optimizer;
    let data = task.data().train;
    if data.is_empty() {
        return Err(empty_training_split());
    }
    let micro_steps = train.accumulation_steps.clamp(1, 2);
    let n = (micro_steps * train.batch_size).min(data.len());
    let group: Vec<Vec<T::Item>> = items(data.as_ref(), 0..n)?
        .chunks(train.batch_size.max(1))
        .map(<[T::Item]>::to_vec)
        .collect();
    let mut precision = MixedPrecision::from_config(train);
    let place = SumPlace::configured(&train.offload);
    let accumulated = accumulate_gradients(task, &model, group, device, &precision, place, || {
        meter.observe();
        Ok::<(), Error>(())
    })?;
    let passes = meter.epoch_peak();
    // The update's own window: the passes' activations are gone, the state is allocated.
    meter.reset_peak();
    let mut optimizer = build_optimizer(train);
    let clip = Clip::from_config(train);
    let (grads, lr) = (accumulated.grads, train.lr);
    let mut master = HostMaster::default();
    let updated = match place.update_on_host {
        true => master.apply(model, grads, &mut optimizer, (&mut precision, clip), lr),
        false => apply_gradients(model, grads, &mut optimizer, &mut precision, clip, lr),
    }
    .map_err(Error::device)?;
    meter.observe();
    drop((updated, optimizer, master));
    let after = meter.read().map_err(Error::device)?;
    let reserved = match after.source {
        MemorySource::CubeclPool => Some(after.bytes_reserved),
        MemorySource::Host => None,
    };
    let figures = StepFigures {
        passes,
        state_to_come: shapes.device_optimizer(),
        update: meter.epoch_peak(),
    };
    Ok(((figures, reserved), checkpoint))
}
