//! One step under the limit, retried smaller when the limit asks: the loop every training
//! loop needs, the trainer's and a hand-written one alike ([`MemoryGuard::run_step`]).

use super::{Breach, MemoryGuard};
use crate::error::Error;
use crate::train::recorder::RunRecorder;

/// Handed to an attempt at a step: checks memory against the limit, after each backward pass.
pub struct StepCheck<'a> {
    guard: &'a mut MemoryGuard,
    recorder: &'a mut RunRecorder,
    epoch: usize,
    step: usize,
}

impl StepCheck<'_> {
    /// Looks at memory now; a breach stops the attempt (return it from the attempt).
    pub fn check(&mut self) -> Result<(), Breach> {
        self.guard.check_step(self.recorder, self.epoch, self.step)
    }
}

impl MemoryGuard {
    /// Runs step `step` of `epoch`. `attempt` gets the micro-batch size to use and a
    /// [`StepCheck`] to call after each backward pass, and returns what the step produced
    /// (the accumulated gradients, say) or the breach a check reported. Under
    /// `on_limit = "shrink"` a breach halves the micro-batch, is recorded, and the attempt
    /// runs again; a failure is recorded and becomes the run's error.
    ///
    /// The attempt must leave the model untouched until it succeeds: only gradients are
    /// computed inside it, and the update follows.
    pub fn run_step<R>(
        &mut self,
        rec: &mut RunRecorder,
        epoch: usize,
        step: usize,
        mut attempt: impl FnMut(usize, &mut StepCheck<'_>) -> Result<R, Breach>,
    ) -> Result<R, Error> {
        self.begin_step(rec);
        loop {
            let micro_batch = self.layout().micro_batch();
            let mut check = StepCheck {
                guard: self,
                recorder: rec,
                epoch,
                step,
            };
            match attempt(micro_batch, &mut check) {
                Ok(done) => return Ok(done),
                Err(Breach::Shrink { observed }) => self.shrink(rec, (epoch, step), observed)?,
                Err(Breach::Fail(e)) => return Err(self.fail(rec, e)),
            }
            self.control.probe().begin_window();
        }
    }
}
