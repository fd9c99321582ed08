//! What a guard does at the limit: checks inside a step, the shrink, `fit`'s layout, and a
//! breach recorded as the run's error with its peak by category.

use super::{Breach, MemoryGuard};
use crate::error::Error;
use crate::memory::format_bytes;
use crate::memory::policy::{held, LimitExceeded, MemoryAction, Phase};
use crate::memory::MemoryUsage;
use crate::memory::{Action, Layout};
use crate::memory::{Footprint, PeakPhase};
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
        self.control.release()?;
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
        let state = self.standing.state(epoch, step);
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
        self.standing.begin_update();
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
        let before = self.standing.shrink(observed, layout);
        let detail = format!(
            "{} over the memory limit at step {step} of epoch {epoch}: micro-batch {} -> {}, \
             accumulation_steps {} -> {} (effective batch unchanged); retrying the step",
            format_bytes(observed),
            before.micro_batch(),
            layout.micro_batch(),
            before.micro_steps(),
            layout.micro_steps(),
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
        self.standing.fit(factor);
        self.record(rec, 0, Action::Fit, detail)
    }

    /// Enforces the run's memory lease of `bytes` as its limit where the config sets none,
    /// before the check at rest (`run_start`).
    pub(crate) fn lease_limit(&mut self, bytes: u64) {
        self.control.limit_to(bytes);
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
            ..self.layout()
        };
        rec.memory_event(0, Action::Probe, detail, window, layout)
    }

    /// Says what the run's tensors hold by kind ([`footprint`](crate::train::footprint)),
    /// so that a limit error breaks its peak down by category.
    pub fn set_footprint(&mut self, footprint: Footprint) {
        self.standing.set_footprint(footprint);
    }

    /// What the run's tensors hold by kind now: the footprint it was given, with what
    /// `train.offload.* = "auto"` has moved to host memory since.
    pub fn footprint(&self) -> Option<Footprint> {
        self.standing.footprint()
    }

    /// The optimizer's state the device holds, or will once the first update allocates it:
    /// none where it is in host memory.
    pub(crate) fn device_state(&self) -> u64 {
        self.standing.device_state()
    }

    /// Records a breach and turns it into the run's error.
    pub(crate) fn fail(&mut self, rec: &mut RunRecorder, mut e: LimitExceeded) -> Error {
        e.breakdown = self.standing.breakdown(&e, rec.steps()).map(Box::new);
        e.offload = self.standing.offload_hints(&e, self.source());
        if let Err(write_error) = self.record(rec, e.epoch, Action::Limit, e.to_string()) {
            return write_error;
        }
        Error::Limit(e)
    }
}
