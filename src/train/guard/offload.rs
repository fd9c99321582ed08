//! `train.offload.* = "auto"`: where the limit needs the saving, the guard moves a part of the
//! step to host memory instead of failing: the gradient sum first (where the step has one),
//! then the optimizer's state. A breach that a shrink would still answer is shrunk first; only
//! one that would fail the run (`on_limit = "fail"`, a futile or exhausted shrink, a `fit` that
//! finds no micro-batch) moves a part. And a limit error names what offload would save where
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
        let Some(part) = self.layout.next_offload() else {
            return Ok(false);
        };
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
        self.record(rec, epoch, Action::Offload, detail)?;
        Ok(true)
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
        let sum_on_device = !f.host_sum && e.accumulation_steps > 1;
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
