//! `memory.on_limit = "fit"` in a hand loop: before its first step, the step is probed with
//! the loop's own loss at the configured micro-batch and at halves of it (the forward and
//! backward passes of its first micro-batches, two where the step accumulates; the gradients
//! dropped, never applied), and the run trains at the largest that fits, as the trainer's does
//! ([`fit_plan`](crate::train::fit_plan)).

use std::ops::Range;

use burn::module::Module;
use burn::tensor::Tensor;

use super::HandLoop;
use crate::error::Error;
use crate::memory::policy::held;
use crate::train::fit_plan::FitTarget;
use crate::train::step::{backward_share, GradientSum};

impl<M: Module + 'static> HandLoop<M> {
    /// Probes a step of `samples` samples with `loss`, picks the micro-batch and records the
    /// choice; an error if none fits.
    pub(super) fn fit(
        &mut self,
        samples: usize,
        loss: &mut impl FnMut(&M, Range<usize>) -> Tensor<1>,
    ) -> Result<(), Error> {
        let train = &self.config.train;
        let target = FitTarget::of(&self.guard, train);
        let model = (self.model.as_ref()).expect("the model is back after every update");
        let before = self.guard.in_use()?;
        let (guard, precision) = (&mut self.guard, &self.precision);
        let probed = loop {
            let probed = target.probe_halves(|micro_batch, micro_steps| {
                let to_come = guard.device_state();
                guard.release()?;
                guard.open_window();
                let micro_batches = samples.div_ceil(micro_batch.max(1)).min(micro_steps.min(2));
                let mut accumulator = GradientSum::<M>::for_step(guard.layout(), micro_batches);
                for start in (0..samples).step_by(micro_batch).take(micro_steps.min(2)) {
                    let rows = start..(start + micro_batch).min(samples);
                    let share = rows.len() as f64 / samples.max(1) as f64;
                    // In the run's precision, as its steps compute.
                    let l = loss(&precision.compute_view(model), rows);
                    backward_share(&mut accumulator, model, precision, l, share, || {
                        guard.peek_window();
                        Ok::<(), Error>(())
                    })?;
                }
                drop(accumulator);
                Ok(held(&guard.read_window()?).0 + to_come)
            })?;
            // Where none fits, `"auto"` offload moves a part of the step to host memory and the
            // probes run again, as the trainer's do.
            match target.short(&probed) {
                Some(why) if guard.offload_next(&mut self.recorder, 0, &why)? => continue,
                _ => break probed,
            }
        };
        target.conclude((&mut self.guard, &mut self.recorder), probed, before)
    }
}
