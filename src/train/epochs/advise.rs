//! The advisor's probes: after the epochs, or at a breach of the limit inside a step, one
//! probed step per lever estimates what it would save ([`Advice`]). The estimates go into the
//! statistics (for `summary.json` and `tidemark report`) and into the breach's error.
//!
//! A probe changes nothing the run keeps (see [`probe`](super::probe)) and gives nothing back
//! (what the run's `memory.clear` does is left to the run's end). A probe that fails (a device
//! out of memory) leaves the run's outcome as it was and is told to the user.

use std::panic::{self, AssertUnwindSafe};

use super::probe::{probe_items, transient, StepUnder};
use super::Epochs;
use crate::config::{OptimizerKind, Precision};
use crate::error::Error;
use crate::memory::policy::Phase;
use crate::memory::{Advice, Effect, Footprint, Lever, MemorySource, Peaks};
use crate::task::Task;
use crate::train::hand::seeded_model;
use crate::train::precision::{self, MixedPrecision};

impl<T: Task> Epochs<'_, T> {
    /// After the epochs, whatever `result` they had: the advice for a run that completed, or
    /// that breached its limit in a step (then also in the error).
    pub(super) fn advise_run(&mut self, result: Result<(), Error>) -> Result<(), Error> {
        let mut peaks = self.run.rec.stats().run_peaks;
        match result {
            Ok(()) => {
                self.run.stats.advice = self.advise_or_tell(peaks);
                Ok(())
            }
            // Not after `fit` found no micro-batch (step 0): its error says what it probed.
            Err(Error::Limit(mut e)) if e.phase == Phase::Step && e.step > 0 => {
                // Before the first update the optimizer's state is still to come: the
                // steps after it will hold it.
                let to_come = if self.run.stats.steps == 0 {
                    peaks.first_step = peaks.first_step.max(e.observed);
                    self.run.guard.device_state()
                } else {
                    0
                };
                peaks.steps.backward = peaks.steps.backward.max(e.observed + to_come);
                self.run.stats.advice = self.advise_or_tell(peaks);
                e.advice = self.run.stats.advice.map(|a| Box::new(a.record()));
                Err(Error::Limit(e))
            }
            Err(e) => Err(e),
        }
    }

    /// [`advise`](Self::advise), or `None` with the user told why not.
    fn advise_or_tell(&mut self, peaks: Peaks) -> Option<Advice> {
        let aside = self.run.guard.readings().epoch_peak_so_far();
        // The run is over: a backend that refuses a probe (a panic) must not lose its summary.
        let advice = panic::catch_unwind(AssertUnwindSafe(|| self.advise(peaks)))
            .unwrap_or_else(|_| Err(Error::Device("a probe panicked".into())));
        self.run.guard.readings().restore_epoch_peak(aside);
        match advice {
            Ok(advice) => Some(advice),
            Err(e) => {
                let text =
                    format!("the memory advisor's probes failed, so there is no advice: {e}");
                self.run.rec.tell(&text);
                None
            }
        }
    }

    /// Probes each lever that applies to this run, whose phases peaked at `peaks`.
    fn advise(&mut self, peaks: Peaks) -> Result<Advice, Error> {
        let task = self.task;
        let run = &mut self.run;
        let (config, learner, guard) = (&run.config, &run.learner, &mut run.guard);
        let items = probe_items(task, config.train.batch_size)?;
        let layout = guard.layout();
        let (batch, steps) = (layout.micro_batch(), layout.micro_steps());
        let configured = StepUnder {
            model: learner.model(),
            device: &learner.device,
            precision: &learner.precision,
        };
        // As `"auto"` offload left it.
        let footprint = guard.footprint().unwrap_or(run.footprint);
        let source = guard.source();
        let mut probe = |at: &StepUnder<'_, T::Model>, micro_batch: usize, micro_steps: usize| {
            transient(guard, task, at, &items, (micro_batch, micro_steps))
        };
        let base = probe(&configured, batch, steps)?;
        let mut advice = Advice::new(peaks);
        let one_set = footprint.gradients / footprint.gradient_sets.max(1);
        for k in [2, 4].into_iter().filter(|&k| batch >= k) {
            let micro_batch = batch.div_ceil(k);
            let with = probe(&configured, micro_batch, steps * k)?;
            let lever = Lever::Accumulation {
                k,
                micro_batch,
                steps: steps * k,
            };
            // A second gradient set, unless the sum is kept in host memory.
            let adds = if steps == 1 && !footprint.host_sum {
                one_set
            } else {
                0
            };
            advice.add(lever, Effect::Transient { base, with }, adds);
        }
        if batch >= 2 {
            let micro_batch = batch.div_ceil(2);
            let with = probe(&configured, micro_batch, steps)?;
            let lever = Lever::SmallerMicroBatch { micro_batch };
            advice.add(lever, Effect::Transient { base, with }, 0);
        }
        let seed = config.run.seed;
        if !config.train.gradient_checkpointing {
            let device = learner.device.clone().gradient_checkpointing();
            // A model made on that device: every tensor it holds (parameters, running
            // statistics) under the device's strategy, and the same sizes as the run's.
            let model = seeded_model(task, seed, &device)?;
            let at = StepUnder {
                model: &model,
                device: &device,
                precision: &learner.precision,
            };
            let with = probe(&at, batch, steps)?;
            advice.add(Lever::Checkpointing, Effect::Transient { base, with }, 0);
        }
        let f32 = config.train.precision == Precision::F32;
        let bf16_runs = task.half_precision_unsupported().is_none();
        if f32 && bf16_runs && precision::supported(&learner.device, Precision::Bf16) {
            let bf16 = MixedPrecision::new(Precision::Bf16, None);
            // A fresh model: the run's own has running statistics (a batch norm's) that f32
            // training wrote, which a bf16 step would mix with bf16 values.
            let model = seeded_model(task, seed, &learner.device)?;
            let at = StepUnder {
                model: &model,
                device: &learner.device,
                precision: &bf16,
            };
            let with = probe(&at, batch, steps)?;
            let copy = footprint.weights / 2;
            advice.add(Lever::Bf16, Effect::Transient { base, with }, copy);
        }
        let state = footprint.device_optimizer();
        if state > 0 {
            let momentum = config.train.optimizer == OptimizerKind::Sgd;
            advice.add(Lever::Sgd { momentum }, Effect::State(state), state);
        }
        if source == MemorySource::CubeclPool {
            offload_levers(&mut advice, &footprint, base, steps);
        }
        Ok(advice)
    }
}

/// Offload's levers on a device with memory of its own, for a step of `steps` micro-batches
/// whose backward passes' transient is `base`: the sum in host memory where the step
/// accumulates on the device (one set off the backward passes, for each micro-batch's set read
/// back and the sum written once), and the optimizer's state in host memory (the state off
/// every figure, for a set of gradients read back and one of weights written); and
/// `[train.ema]`'s average in host memory (off every figure, for the weights read back each
/// step).
fn offload_levers(advice: &mut Advice, footprint: &Footprint, base: u64, steps: usize) {
    let set = footprint.gradient_set();
    if steps > 1 && !footprint.host_sum {
        let moved = set * (steps as u64 + 1);
        let with = base.saturating_sub(set);
        advice.add(
            Lever::OffloadGradients { moved },
            Effect::Transient { base, with },
            0,
        );
    }
    if footprint.device_optimizer() > 0 {
        let lever = Lever::OffloadOptimizer { moved: 2 * set };
        advice.add(lever, Effect::State(footprint.optimizer), 0);
    }
    let average = footprint.device_average();
    if average > 0 {
        let lever = Lever::EmaOnHost { moved: average };
        advice.add(lever, Effect::State(average), 0);
    }
}
