//! What a guard does at the limit: checks inside a step, the shrink, `fit`'s layout, and a
//! breach recorded as the run's error with its peak by category.

use super::{Breach, MemoryGuard};
use crate::error::Error;
use crate::memory::format_bytes;
use crate::memory::policy::{held, Attempt, LimitExceeded, MemoryAction, Phase};
use crate::memory::MemoryUsage;
use crate::memory::{Action, Layout};
use crate::memory::{Breakdown, Footprint, PeakPhase};
use crate::train::recorder::RunRecorder;

impl MemoryGuard {
    /// Validation in epoch `epoch` that held `window` at `micro_batch`, under
    /// `on_limit = "shrink"`: where it held more than the limit and the micro-batch can halve,
    /// the shrink is recorded (validation's own: training keeps its micro-batch), free memory
    /// is given back, and the half is returned, to validate again at. `None` where it fit (the
    /// epoch's end checks it), where nothing can shrink, or where there is no limit.
    pub(crate) fn shrink_validation(
        &mut self,
        rec: &mut RunRecorder,
        epoch: usize,
        window: &MemoryUsage,
        micro_batch: usize,
    ) -> Result<Option<usize>, Error> {
        let (observed, measure) = held(window);
        let over = self.limit_bytes().filter(|&limit| observed > limit);
        let Some(limit) = over.filter(|_| micro_batch > 1) else {
            return Ok(None);
        };
        let half = micro_batch.div_ceil(2);
        let detail = format!(
            "validation held {} ({measure}) over the limit of {} at a micro-batch of \
             {micro_batch}: it runs again at {half} (training keeps its own)",
            format_bytes(observed),
            format_bytes(limit)
        );
        self.record(rec, epoch, Action::Shrink, detail)?;
        self.release()?;
        Ok(Some(half))
    }

    /// Looks at memory inside step `step` of `epoch`, after a backward pass: a breach of the
    /// limit stops the step. The figure counts as the backward passes' peak (the breakdown's
    /// `phase`).
    pub(super) fn check_step(
        &mut self,
        rec: &mut RunRecorder,
        epoch: usize,
        step: usize,
    ) -> Result<(), Breach> {
        let usage = self.control.meter().observe();
        rec.step_figure(PeakPhase::Backward, usage.peak_bytes_in_use);
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
                MemoryAction::ShrinkBatch { layout } => {
                    return Err(Breach::Shrink {
                        observed: held(usage).0,
                        layout,
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
    /// alone (the breakdown's `phase`, the advisor's phases). Before the run's first update,
    /// `"auto"` may move the optimizer's state to host memory before it exists.
    pub fn before_update(
        &mut self,
        rec: &mut RunRecorder,
        epoch: usize,
        step: usize,
    ) -> Result<(), Error> {
        let usage = self.control.meter().observe();
        rec.step_figure(PeakPhase::Backward, usage.peak_bytes_in_use);
        self.enforce(rec, epoch, step, &usage)?;
        if rec.steps() == 0 {
            self.offload_state_to_come(rec, (epoch, step), held(&usage).0)?;
        }
        self.control.meter().begin_window();
        self.in_update = true;
        Ok(())
    }

    /// After the optimizer update of step `step`, which allocates too (the optimizer's state,
    /// on the first step): a breach fails the run, or with `on_limit = "shrink"` halves the
    /// micro-batch from the next step on.
    /// The recorder counts the step as taken.
    pub fn after_step(
        &mut self,
        rec: &mut RunRecorder,
        epoch: usize,
        step: usize,
    ) -> Result<(), Error> {
        rec.set_step(step);
        let usage = self.control.meter().observe();
        rec.step_figure(PeakPhase::Update, usage.peak_bytes_in_use);
        rec.step_point(step, usage.bytes_in_use);
        self.enforce(rec, epoch, step, &usage)
    }

    /// Checks `usage` outside an attempt at a step: a breach fails the run, or halves the
    /// micro-batch from the next step on.
    fn enforce(
        &mut self,
        rec: &mut RunRecorder,
        epoch: usize,
        step: usize,
        usage: &MemoryUsage,
    ) -> Result<(), Error> {
        match self.check_usage(epoch, step, usage) {
            Ok(()) => Ok(()),
            Err(Breach::Fail(e)) => {
                let why = format!("{} over the limit at step {step}", format_bytes(e.observed));
                match self.offload_next(rec, epoch, &why)? {
                    true => Ok(()),
                    false => Err(self.fail(rec, e)),
                }
            }
            Err(Breach::Shrink { observed, layout }) => {
                match self.offload_before_shrink(rec, (epoch, step), observed)? {
                    true => Ok(()),
                    false => self.shrink(rec, (epoch, step), observed, layout),
                }
            }
        }
    }

    /// Takes the limit policy's `layout` (the micro-batch halved, accumulation doubled) after
    /// a breach at step `step`, and records it; the caller retries the step with
    /// [`layout`](Self::layout).
    pub(super) fn shrink(
        &mut self,
        rec: &mut RunRecorder,
        (epoch, step): (usize, usize),
        observed: u64,
        layout: Layout,
    ) -> Result<(), Error> {
        let before = self.layout;
        self.previous_attempt = Some(Attempt {
            accumulation_steps: before.micro_steps(),
            observed,
        });
        self.layout = layout;
        let detail = format!(
            "{} over the memory limit at step {step} of epoch {epoch}: micro-batch {} -> {}, \
             accumulation_steps {} -> {} (effective batch unchanged); retrying the step",
            format_bytes(observed),
            before.micro_batch(),
            self.layout.micro_batch(),
            before.micro_steps(),
            self.layout.micro_steps(),
        );
        self.record(rec, epoch, Action::Shrink, detail)
    }

    /// `on_limit = "fit"`, before the first step: cuts each loader batch into `factor`
    /// micro-batches from now on, and records why (`detail`) as a `fit` memory action.
    pub(crate) fn fit_layout(
        &mut self,
        rec: &mut RunRecorder,
        factor: usize,
        detail: String,
    ) -> Result<(), Error> {
        self.layout.factor = factor.max(1);
        self.record(rec, 0, Action::Fit, detail)
    }

    /// `on_limit = "fit"`, before the first step: one probe's `window` at halving `factor` as
    /// a `probe` memory action (`detail` says against what), its peak counted in the run's.
    pub(crate) fn record_probe(
        &mut self,
        rec: &mut RunRecorder,
        window: MemoryUsage,
        factor: usize,
        detail: String,
    ) -> Result<(), Error> {
        rec.outside_peak(window.peak_bytes_in_use);
        let layout = Layout {
            factor,
            ..self.layout
        };
        rec.memory_event(0, Action::Probe, detail, window, layout)
    }

    /// Says what the run's tensors hold by kind ([`footprint`](crate::train::footprint)),
    /// so that a limit error breaks its peak down by category.
    pub fn set_footprint(&mut self, footprint: Footprint) {
        self.footprint = Some(footprint);
    }

    /// What the run's tensors hold by kind now: the footprint it was given, with what
    /// `train.offload.* = "auto"` has moved to host memory since.
    pub fn footprint(&self) -> Option<Footprint> {
        self.footprint
    }

    /// The optimizer's state the device holds, or will once the first update allocates it:
    /// none where it is in host memory.
    pub(crate) fn device_state(&self) -> u64 {
        self.footprint.map_or(0, |f| f.device_optimizer())
    }

    /// Records a breach and turns it into the run's error.
    pub(crate) fn fail(&mut self, rec: &mut RunRecorder, mut e: LimitExceeded) -> Error {
        e.breakdown = self.breach_breakdown(&e, rec.steps()).map(Box::new);
        e.offload = self.offload_hints(&e);
        if let Err(write_error) = self.record(rec, e.epoch, Action::Limit, e.to_string()) {
            return write_error;
        }
        Error::Limit(e)
    }

    /// The figure of breach `e` by category, where the run's footprint is known, after
    /// `steps_done` optimizer steps.
    fn breach_breakdown(&self, e: &LimitExceeded, steps_done: usize) -> Option<Breakdown> {
        let full = self.footprint?;
        // Before the first update the optimizer has no state yet; a probe before training
        // (`on_limit = "fit"`, step 0) and the estimate at rest count the state the first
        // update will allocate.
        let ahead = (e.phase == Phase::Step && e.step == 0) || e.phase == Phase::RunStart;
        let state = if steps_done == 0 && !ahead {
            0
        } else {
            full.optimizer
        };
        // In host memory the state is all there from the first update on, and not the device's.
        let state = match full.host_optimizer {
            true => full.optimizer,
            false => state,
        };
        // The gradient sets of the layout at the breach, which a shrink or a fit changed.
        let sets = if e.accumulation_steps > 1 && !full.host_sum {
            2
        } else {
            1
        };
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
            .saturating_sub(full.gradients + full.device_optimizer() - f.device_optimizer());
        let phase = match e.phase {
            Phase::Step if self.in_update => PeakPhase::Update,
            Phase::RunStart | Phase::Step | Phase::RunEnd => PeakPhase::Backward,
            Phase::EpochEnd | Phase::Checkpoint => PeakPhase::Outside,
        };
        let mut breakdown = Breakdown::of(&f, rest.min(e.observed), e.observed, phase);
        if e.phase == Phase::RunStart {
            // An estimate at rest holds no step's activations.
            breakdown.estimated.retain(|c| c != "activations");
        }
        Some(breakdown)
    }
}
