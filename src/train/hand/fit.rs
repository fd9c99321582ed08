//! `memory.on_limit = "fit"` in a hand loop: before its first step, the step is probed with
//! the loop's own loss from the smallest of the configured micro-batch's halvings up (the
//! forward and backward passes of its first micro-batches, two where the step accumulates; the
//! gradients dropped, never applied), and the run trains at the largest that fits, as the
//! trainer's does ([`fit_plan`](crate::train::fit_plan)).

use std::ops::Range;

use burn::module::Module;

use super::HandLoop;
use crate::error::Error;
use crate::task::StepOutput;
use crate::train::fit_plan::{FitTarget, Reading};
use crate::train::step::{accumulate, micro_ranges, SumPlace};

impl<M: Module + 'static> HandLoop<M> {
    /// Probes a step of `batches` with `output`, picks the micro-batch and records the choice;
    /// an error if none fits.
    pub(super) fn fit(
        &mut self,
        batches: &[usize],
        output: &mut impl FnMut(&M, Range<usize>) -> StepOutput,
    ) -> Result<(), Error> {
        let before = self.guard.readings().in_use()?;
        let (guard, rec, learner) = (&mut self.guard, &mut self.rec, &self.learner);
        let (target, probed) = loop {
            // Taken again after each offload: the layout it moved changes what a step holds
            // whatever its micro-batch (with the gradient sum in host memory, one set, not
            // two). A target kept from before predicted a set too many past the first probe,
            // and a run that fit at 64 trained at a micro-batch of 1.
            let target = FitTarget::of(guard, &self.config.train);
            let probed = target.probe_halves(|micro_batch, micro_steps| {
                let to_come = guard.device_state();
                let start = guard.readings().release()?;
                guard.readings().open_window();
                // The step's first micro-batches, in the run's precision, as its steps compute;
                // stopped after the first whose figure already passes the target.
                let mut parts = micro_ranges(batches, micro_batch);
                parts.truncate(micro_steps.min(2));
                let place = SumPlace::from(guard.layout());
                let (model, precision) = (learner.model(), &learner.precision);
                let probe = accumulate(
                    model,
                    precision,
                    place,
                    parts,
                    &mut *output,
                    || match target.passed(&guard.readings().peek_window(), to_come) {
                        true => Err(()),
                        false => Ok(()),
                    },
                );
                let stopped = probe.is_err();
                drop(probe);
                Ok(Reading {
                    window: guard.readings().window()?,
                    start,
                    state_to_come: to_come,
                    stopped,
                })
            })?;
            // Where none fits, `"auto"` offload moves a part of the step to host memory and the
            // probes run again, as the trainer's do.
            match target.short(&probed) {
                Some(why) if guard.offload_next(rec, 0, &why)? => continue,
                _ => break (target, probed),
            }
        };
        target.conclude((&mut self.guard, &mut self.rec), probed, before)
    }
}
