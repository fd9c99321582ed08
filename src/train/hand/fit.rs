//! `memory.on_limit = "fit"` in a hand loop: before its first step, the step is probed with
//! the loop's own loss at the configured micro-batch and at halves of it (the forward and
//! backward passes of its first micro-batches, two where the step accumulates; the gradients
//! dropped, never applied), and the run trains at the largest that fits, as the trainer's does
//! ([`fit_plan`](crate::train::fit_plan)).

use std::ops::Range;

use burn::module::Module;
use burn::optim::GradientsAccumulator;
use burn::tensor::Tensor;

use super::HandLoop;
use crate::error::Error;
use crate::memory::policy::held;
use crate::train::fit_plan::{FitProbe, FitTarget};
use crate::train::step::{backward_share, footprint};

impl<M: Module + 'static> HandLoop<M> {
    /// Probes a step of `samples` samples with `loss`, picks the micro-batch and records the
    /// choice; an error if none fits.
    pub(super) fn fit(
        &mut self,
        samples: usize,
        loss: &mut impl FnMut(&M, Range<usize>) -> Tensor<1>,
    ) -> Result<(), Error> {
        let train = &self.config.train;
        let target = FitTarget {
            limit: (self.governor.control().limit_bytes()).expect("validated: fit needs a limit"),
            batch: train.batch_size,
            accumulation: train.accumulation_steps,
            source: self.governor.control().source(),
        };
        let model = self
            .model
            .as_ref()
            .expect("the model is back after every update");
        let to_come = footprint(model, train, None).optimizer;
        let before = self.governor.in_use()?;
        let mut probes = Vec::new();
        let mut factor = 1;
        loop {
            let micro_batch = target.batch.div_ceil(factor);
            let micro_steps = (target.accumulation * factor).min(2);
            let governor = &mut self.governor;
            governor.release()?;
            governor.open_window();
            let mut accumulator = GradientsAccumulator::<M>::new();
            for start in (0..samples).step_by(micro_batch).take(micro_steps) {
                let rows = start..(start + micro_batch).min(samples);
                let share = rows.len() as f64 / samples.max(1) as f64;
                let l = loss(model, rows);
                backward_share(&mut accumulator, model, &self.precision, l, share, || {
                    governor.peek_window();
                    Ok::<(), Error>(())
                })?;
            }
            drop(accumulator);
            let peak = held(&governor.read_window()?).0 + to_come;
            probes.push(FitProbe { micro_batch, peak });
            if target.done(&probes) {
                break;
            }
            factor *= 2;
        }
        let kept = self.governor.release()? as i64 - before as i64;
        match target.choose(&probes, factor, kept) {
            Ok((factor, detail)) => self.governor.fit_layout(factor, detail),
            Err(e) => Err(self.governor.fail(e)),
        }
    }
}
