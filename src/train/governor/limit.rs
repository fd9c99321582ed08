//! What a governor does at the limit: checks inside a step, the shrink, `fit`'s layout and
//! release, and a breach recorded as the run's error with its peak by category.

use super::{Breach, Governor};
use crate::error::Error;
use crate::memory::format_bytes;
use crate::memory::policy::{held, Attempt, LimitExceeded, MemoryAction, Phase};
use crate::memory::MemoryUsage;
use crate::memory::{Breakdown, Footprint, PeakPhase};
use crate::record::Action;
use crate::record::StepSample;

impl Governor {
    /// Looks at memory inside step `step` of `epoch`, after a backward pass: a breach of the
    /// limit stops the step. The figure counts as the backward passes' peak (the breakdown's
    /// `phase`).
    pub fn check_step(&mut self, epoch: usize, step: usize) -> Result<(), Breach> {
        let usage = self.control.probe().observe();
        self.record_peak(PeakPhase::Backward, usage.peak_bytes_in_use);
        self.check_usage(epoch, step, &usage)
    }

    /// Checks `usage`, read in step `step` of `epoch`, against the policies.
    fn check_usage(
        &mut self,
        epoch: usize,
        step: usize,
        usage: &MemoryUsage,
    ) -> Result<(), Breach> {
        let state = self.state(epoch, step);
        for action in self.control.decide(Phase::Step, usage, &state) {
            match action {
                MemoryAction::ShrinkBatch { .. } => {
                    return Err(Breach::Shrink {
                        observed: held(usage).0,
                    })
                }
                MemoryAction::Fail(e) => return Err(Breach::Fail(e)),
                // No policy reserves or cleans mid-step.
                MemoryAction::Reserve { .. } | MemoryAction::Cleanup => {}
            }
        }
        Ok(())
    }

    /// Between step `step`'s backward passes and its update: the passes' figure so far (with
    /// the sum of the last micro-batch's gradients) counts as the backward passes' peak and
    /// is checked, and the update gets its own window, so that its figure is the update's
    /// alone (the breakdown's `phase`, the advisor's phases).
    pub fn before_update(&mut self, epoch: usize, step: usize) -> Result<(), Error> {
        let usage = self.control.probe().observe();
        self.record_peak(PeakPhase::Backward, usage.peak_bytes_in_use);
        self.enforce(epoch, step, &usage)?;
        self.control.probe().begin_window();
        self.in_update = true;
        Ok(())
    }

    /// After the optimizer update of step `step`, which allocates too (the optimizer's state,
    /// on the first step): a breach fails the run, or with `on_limit = "shrink"` halves the
    /// micro-batch from the next step on.
    pub fn after_step(&mut self, epoch: usize, step: usize) -> Result<(), Error> {
        self.step = step;
        let usage = self.control.probe().observe();
        self.record_peak(PeakPhase::Update, usage.peak_bytes_in_use);
        self.trace.push(StepSample {
            step,
            peak: self.step_peak,
            in_use: usage.bytes_in_use,
        });
        self.enforce(epoch, step, &usage)
    }

    /// Checks `usage` outside an attempt at a step: a breach fails the run, or halves the
    /// micro-batch from the next step on.
    fn enforce(&mut self, epoch: usize, step: usize, usage: &MemoryUsage) -> Result<(), Error> {
        match self.check_usage(epoch, step, usage) {
            Ok(()) => Ok(()),
            Err(Breach::Fail(e)) => Err(self.fail(e)),
            Err(Breach::Shrink { observed }) => self.shrink(epoch, step, observed),
        }
    }

    /// Records a step's figure `peak` in `phase`, for the epoch's and the run's peaks.
    fn record_peak(&mut self, phase: PeakPhase, peak: u64) {
        // Before the first update (step 0 done) the optimizer has no state yet.
        let (epoch, run) = match phase {
            PeakPhase::Update => (
                &mut self.step_peaks.update,
                &mut self.stats.run_peaks.steps.update,
            ),
            _ if self.step == 0 => (
                &mut self.step_peaks.backward,
                &mut self.stats.run_peaks.first_step,
            ),
            _ => (
                &mut self.step_peaks.backward,
                &mut self.stats.run_peaks.steps.backward,
            ),
        };
        *epoch = (*epoch).max(peak);
        *run = (*run).max(peak);
        self.step_peak = self.step_peak.max(peak);
    }

    /// Halves the micro-batch (doubling accumulation) after a breach at step `step`, and
    /// records it; the caller retries the step with [`layout`](Self::layout).
    pub fn shrink(&mut self, epoch: usize, step: usize, observed: u64) -> Result<(), Error> {
        let before = self.layout;
        self.previous_attempt = Some(Attempt {
            accumulation_steps: before.micro_steps(),
            observed,
        });
        self.layout.factor *= 2;
        let detail = format!(
            "{} over the memory limit at step {step} of epoch {epoch}: micro-batch {} -> {}, \
             accumulation_steps {} -> {} (effective batch unchanged); retrying the step",
            format_bytes(observed),
            before.micro_batch(),
            self.layout.micro_batch(),
            before.micro_steps(),
            self.layout.micro_steps(),
        );
        self.memory_event(epoch, Action::Shrink, detail)
    }

    /// `on_limit = "fit"`, before the first step: cuts each loader batch into `factor`
    /// micro-batches from now on, and records why (`detail`) as a `fit` memory action.
    pub fn fit_layout(&mut self, factor: usize, detail: String) -> Result<(), Error> {
        self.layout.factor = factor.max(1);
        self.memory_event(0, Action::Fit, detail)
    }

    /// Says what the run's tensors hold by kind ([`footprint`](crate::train::footprint)),
    /// so that a limit error breaks its peak down by category.
    pub fn set_footprint(&mut self, footprint: Footprint) {
        self.footprint = Some(footprint);
    }

    /// Records a breach and turns it into the run's error.
    pub fn fail(&mut self, mut e: LimitExceeded) -> Error {
        e.breakdown = self.breach_breakdown(&e).map(Box::new);
        if let Err(write_error) = self.memory_event(e.epoch, Action::Limit, e.to_string()) {
            return write_error;
        }
        Error::Limit(e)
    }

    /// The figure of breach `e` by category, where the run's footprint is known.
    fn breach_breakdown(&self, e: &LimitExceeded) -> Option<Breakdown> {
        let full = self.footprint?;
        // Before the first update the optimizer has no state yet; a probe before training
        // (`on_limit = "fit"`, step 0) counts the state the first update will allocate.
        let probe = e.phase == Phase::Step && e.step == 0;
        let state = if self.step == 0 && !probe {
            0
        } else {
            full.optimizer
        };
        // The gradient sets of the layout at the breach, which a shrink or a fit changed.
        let sets = if e.accumulation_steps > 1 { 2 } else { 1 };
        let f = Footprint {
            optimizer: state,
            gradients: full.gradients / full.gradient_sets.max(1) * sets,
            gradient_sets: sets,
            ..full
        };
        // At rest: what the run held at the start and the optimizer's state once it exists;
        // the gradients are part of the step's transient.
        let rest = self
            .resting_estimate
            .saturating_sub(full.gradients + full.optimizer - state);
        let phase = match e.phase {
            Phase::Step if self.in_update => PeakPhase::Update,
            Phase::RunStart | Phase::Step | Phase::RunEnd => PeakPhase::Backward,
            Phase::EpochEnd | Phase::Checkpoint => PeakPhase::Outside,
        };
        Some(Breakdown::of(&f, rest.min(e.observed), e.observed, phase))
    }
}
