//! One step under the limit, retried smaller when the limit asks: the loop every training
//! loop needs, the trainer's and a hand-written one alike ([`MemoryGuard::run_step`]).

use super::{Breach, MemoryGuard};
use crate::error::Error;
use crate::memory::format_bytes;
use crate::train::recorder::RunRecorder;

/// Handed to an attempt at a step: checks memory against the limit, after each backward pass.
pub struct StepCheck<'a> {
    guard: &'a mut MemoryGuard,
    rec: &'a mut RunRecorder,
    epoch: usize,
    step: usize,
}

impl StepCheck<'_> {
    /// Looks at memory now; a breach stops the attempt (return it from the attempt).
    pub fn check(&mut self) -> Result<(), Breach> {
        self.guard.check_step(self.rec, self.epoch, self.step)
    }

    /// The layout this attempt runs under: its micro-batch, and where its gradient sum and
    /// update are kept ([`GradientSum::for_step`](crate::train::GradientSum::for_step) takes it).
    pub fn layout(&self) -> crate::train::Layout {
        self.guard.layout()
    }
}

impl MemoryGuard {
    /// Runs step `step` of `epoch`. `attempt` gets the micro-batch size to use and a
    /// [`StepCheck`] to call after each backward pass, and returns what the step produced
    /// (the accumulated gradients, say) or the breach a check reported. Under
    /// `on_limit = "shrink"` a breach halves the micro-batch, is recorded, and the attempt
    /// runs again; where a breach would fail the run and `train.offload.* = "auto"` may still
    /// move a part of the step to host memory, it moves it and the attempt runs again (read
    /// the layout from [`StepCheck::layout`]); a failure is recorded and becomes the run's
    /// error.
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
                rec,
                epoch,
                step,
            };
            match attempt(micro_batch, &mut check) {
                Ok(done) => return Ok(done),
                Err(Breach::Shrink { observed, layout }) => {
                    if !self.offload_before_shrink(rec, (epoch, step), observed)? {
                        self.shrink(rec, (epoch, step), observed, layout)?;
                    }
                    // The breached attempt's pool pages back, so that the retry is measured on
                    // its own.
                    self.control.release()?;
                }
                Err(Breach::Fail(e)) => {
                    let why = format!("{} over the limit at step {step}", format_bytes(e.observed));
                    if !self.offload_next(rec, epoch, &why)? {
                        return Err(self.fail(rec, e));
                    }
                }
            }
            self.control.meter().begin_window();
        }
    }
}
