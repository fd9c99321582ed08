//! `train.offload.* = "auto"`: where the limit needs the saving, the guard moves a part of the
//! step to host memory instead of failing: the gradient sum first (where the step has one),
//! then the optimizer's state. It moves one where the run would otherwise fail
//! (`on_limit = "fail"`, a futile or exhausted shrink, a `fit` that finds no micro-batch), and
//! under `"shrink"` where halving the micro-batch cannot pay for the overshoot; a breach that
//! halving can answer is shrunk. And a limit error names what offload would save where
//! it is not allowed to act on its own.

use super::MemoryGuard;
use crate::config::Offload;
use crate::error::Error;
use crate::memory::policy::{LimitExceeded, OffloadHint};
use crate::memory::{format_bytes, Action, MemorySource};
use crate::train::layout::Offloaded;
use crate::train::recorder::RunRecorder;

impl MemoryGuard {
    /// Moves the next part that `"auto"` may still move ([`Layout::next_offload`]) to host
    /// memory from now on, gives back the device memory the breached attempt took, and
    /// records it as an `offload` memory action at `epoch` with `why`. Returns whether a part
    /// moved.
    ///
    /// [`Layout::next_offload`]: crate::train::Layout::next_offload
    pub(crate) fn offload_next(
        &mut self,
        rec: &mut RunRecorder,
        epoch: usize,
        why: &str,
    ) -> Result<bool, Error> {
        match self.layout.next_offload() {
            Some(part) => self.offload(rec, epoch, part, why).map(|()| true),
            None => Ok(false),
        }
    }

    /// Before the run's first update, which allocates the optimizer's state: where
    /// `train.offload.optimizer = "auto"` and what is held now (`held`) plus that state would
    /// break the limit, the state goes to host memory before it exists. (Once it exists on the
    /// device it leaves only at the next update, after the step's gradient pass.)
    pub(super) fn offload_state_to_come(
        &mut self,
        rec: &mut RunRecorder,
        (epoch, step): (usize, usize),
        held: u64,
    ) -> Result<(), Error> {
        let (Some(f), Some(limit)) = (self.footprint, self.limit_bytes()) else {
            return Ok(());
        };
        let state = f.device_optimizer();
        if self.layout.optimizer != Offload::Auto || state == 0 || held + state <= limit {
            return Ok(());
        }
        let why = format!(
            "{} held before the first update, which would add {} of optimizer state at step \
             {step}",
            format_bytes(held),
            format_bytes(state)
        );
        self.offload(rec, epoch, Offloaded::Optimizer, &why)
    }

    /// Moves `part` to host memory from now on, and records it.
    fn offload(
        &mut self,
        rec: &mut RunRecorder,
        epoch: usize,
        part: Offloaded,
        why: &str,
    ) -> Result<(), Error> {
        self.layout.offload(part);
        let (sum, update) = (part == Offloaded::Gradients, part == Offloaded::Optimizer);
        let saved = self.footprint.map(|f| match part {
            Offloaded::Gradients => f.gradient_set(),
            Offloaded::Optimizer => f.optimizer,
        });
        let before = self.footprint;
        self.footprint = self.footprint.map(|f| f.placed(sum, update));
        // What the run holds at rest on the device no longer counts what moved.
        if let (Some(before), Some(after)) = (before, self.footprint) {
            let device = |f: crate::memory::Footprint| f.gradients + f.device_optimizer();
            let moved = device(before) - device(after);
            self.resting_estimate = self.resting_estimate.saturating_sub(moved);
        }
        self.previous_attempt = None;
        self.control.release()?;
        let saves = saved.map_or(String::new(), |bytes| {
            format!(" (about {} of device memory)", format_bytes(bytes))
        });
        let what = match part {
            Offloaded::Gradients => "the step's gradient sum is kept in host memory",
            Offloaded::Optimizer => {
                "the optimizer's state and update are kept in host memory, with an f32 master \
                 copy of the weights"
            }
        };
        let detail = format!(
            "{} = \"auto\": {why}; {what} from now on{saves}",
            part.key()
        );
        self.record(rec, epoch, Action::Offload, detail)
    }

    /// At a breach of `observed` bytes that `on_limit = "shrink"` would answer by halving the
    /// micro-batch: moves a part to host memory instead where `"auto"` may and halving cannot
    /// pay for the overshoot. Halving saves at most half the step's peak in use beyond what the
    /// run holds at rest (its activations), and the first halving of a step that does not
    /// accumulate adds a gradient set. Returns whether a part
    /// moved (the caller then retries without shrinking).
    pub(super) fn offload_before_shrink(
        &mut self,
        rec: &mut RunRecorder,
        (epoch, step): (usize, usize),
        observed: u64,
    ) -> Result<bool, Error> {
        let (Some(f), Some(limit)) = (self.footprint, self.limit_bytes()) else {
            return Ok(false);
        };
        if self.layout.next_offload().is_none() {
            return Ok(false);
        }
        // What halving frees is bytes in use (on pools the breach is read in pages, which a
        // smaller step does not give back by halves).
        let in_use = self.control.window().peak_bytes_in_use.min(observed);
        let halving_saves = in_use.saturating_sub(self.resting_estimate) / 2;
        let adds = match self.layout.micro_steps() == 1 && !f.host_sum {
            true => f.gradient_set(),
            false => 0,
        };
        if halving_saves >= observed.saturating_sub(limit) + adds {
            return Ok(false);
        }
        let why = format!(
            "{} over the limit at step {step}, where halving the micro-batch saves at most {}",
            format_bytes(observed),
            format_bytes(halving_saves.saturating_sub(adds))
        );
        self.offload_next(rec, epoch, &why)
    }

    /// What offload would save at breach `e` where `train.offload` does not allow it to act:
    /// each part still on the device with what it holds there, on a device with memory of its
    /// own. Empty on flex, or where nothing is left to move.
    pub(super) fn offload_hints(&self, e: &LimitExceeded) -> Box<[OffloadHint]> {
        let Some(f) = self.footprint else {
            return Box::default();
        };
        if self.source() != MemorySource::CubeclPool {
            return Box::default();
        }
        let layout = self.layout;
        let mut hints = Vec::new();
        // In the update the step's sum is the one gradient set left: moving it saves nothing.
        let sum_on_device = !f.host_sum && e.accumulation_steps > 1 && !self.in_update;
        if sum_on_device && layout.gradients == Offload::None {
            hints.push(OffloadHint {
                key: Offloaded::Gradients.key(),
                saves: f.gradient_set(),
            });
        }
        if !f.host_optimizer && f.optimizer > 0 && layout.optimizer == Offload::None {
            hints.push(OffloadHint {
                key: Offloaded::Optimizer.key(),
                saves: f.optimizer,
            });
        }
        hints.into()
    }
}
