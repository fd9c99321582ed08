//! `memory.on_limit = "fit"`: plan, then lock. Before the first step the step is probed from
//! the smallest of the configured micro-batch's halvings up, each where the probes before it
//! predict that it fits ([`FitTarget`]), and the run trains at the largest that fits under the
//! limit less [`FIT_MARGIN`](crate::memory::policy::FIT_MARGIN), keeping the effective batch
//! through accumulation. From then on the limit is enforced as with `"fail"`.
//!
//! A probe runs the forward and backward passes of one step's first micro-batches (two when
//! the step accumulates, so that the running sum and a micro-batch's own gradients are both
//! counted) and adds the optimizer's state, which the first update will allocate; it stops after
//! a micro-batch whose figure already passes the target, as a step stops at the limit. It changes
//! no weights (the gradients are dropped, never applied), draws nothing from the loader (the
//! items come from the dataset itself) and nothing that training draws later (each step seeds
//! the device's generator). Afterwards the free memory is given back (pool pages, heap pages)
//! and what the probes kept is measured and recorded. Preallocation is refused with `"fit"`:
//! the release would give its reservation back. Where no micro-batch fits and
//! `train.offload.* = "auto"` may still move a part of the step to host memory, it moves it
//! and the probes run again.

use super::probe::StepUnder;
use super::Epochs;
use crate::error::Error;
use crate::task::Task;
use crate::train::fit_plan::FitTarget;

impl<T: Task> Epochs<'_, T> {
    /// Probes, picks the micro-batch and records the choice; an error if none fits.
    pub(super) fn fit(&mut self, run: &mut super::setup::Run<T>) -> Result<(), Error> {
        let target = FitTarget::of(self.guard, &self.config.train);
        let items = self.probe_items()?;
        let before = self.guard.in_use()?;
        let probed = loop {
            let probed = target.probe_halves(|micro_batch, micro_steps| {
                let at = StepUnder::run_as_configured(run);
                self.probe(&at, &items, (micro_batch, micro_steps), &target)
            })?;
            // Where none fits, `"auto"` offload moves a part of the step to host memory and
            // the probes run again.
            match target.short(&probed) {
                Some(why) if self.guard.offload_next(0, &why)? => continue,
                _ => break probed,
            }
        };
        target.conclude(self.guard, probed, before)
    }
}
