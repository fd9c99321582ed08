//! `train.offload.* = "auto"` carried out: where the limit needs the saving, the guard moves a
//! part of the step to host memory instead of failing (the gradient sum first, where the step
//! has one, then the optimizer's state). It moves one where the run would otherwise fail
//! (`on_limit = "fail"`, a futile or exhausted shrink, a `fit` that finds no micro-batch), and
//! under `"shrink"` where halving the micro-batch cannot pay for the overshoot. Which part and
//! when is the pure policy's ([`crate::memory::policy::OffloadView`]); the guard reads the
//! device for it, moves the part, gives back the device memory and records why.

use super::MemoryGuard;
use crate::error::Error;
use crate::memory::Offloaded;
use crate::memory::{format_bytes, Action};
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
        match self.layout().next_offload() {
            Some(part) => self.offload(rec, epoch, part, why).map(|()| true),
            None => Ok(false),
        }
    }

    /// Before the run's first update, which allocates the optimizer's state: moves it to host
    /// memory before it exists where the policy says ([`OffloadView::state_to_come`]). (Once
    /// it exists on the device it leaves only at the next update, after the step's gradient
    /// pass.)
    pub(super) fn offload_state_to_come(
        &mut self,
        rec: &mut RunRecorder,
        (epoch, step): (usize, usize),
        held: u64,
    ) -> Result<(), Error> {
        let view = self.standing.offload_view(self.limit_bytes());
        match view.and_then(|v| v.state_to_come(held, step)) {
            Some(d) => self.offload(rec, epoch, d.part, &d.why),
            None => Ok(()),
        }
    }

    /// Moves `part` to host memory from now on, and records it.
    fn offload(
        &mut self,
        rec: &mut RunRecorder,
        epoch: usize,
        part: Offloaded,
        why: &str,
    ) -> Result<(), Error> {
        let saved = self.standing.offload(part);
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
    /// micro-batch: moves a part to host memory instead where the policy says
    /// ([`OffloadView::before_shrink`]). Returns whether a part moved (the caller then retries
    /// without shrinking).
    pub(super) fn offload_before_shrink(
        &mut self,
        rec: &mut RunRecorder,
        (epoch, step): (usize, usize),
        observed: u64,
    ) -> Result<bool, Error> {
        let in_use = self.control.window().peak_bytes_in_use;
        let view = self.standing.offload_view(self.limit_bytes());
        match view.and_then(|v| v.before_shrink(observed, in_use, step)) {
            Some(d) => self.offload(rec, epoch, d.part, &d.why).map(|()| true),
            None => Ok(false),
        }
    }
}
