//! Where a run stands against its limit: the state the guard decides with, apart from the
//! readings it measures with ([`Readings`](super::Readings)) and from the device and the
//! records it acts on ([`MemoryGuard`](super::MemoryGuard)). The batch layout a limit may
//! shrink or move to host memory, the run's estimate at rest, the attempt a breach stopped,
//! what the run's tensors hold by kind, and whether the step is in its update; and what
//! follows from them alone: the state the policies see, the auto-offload's view, a breach's
//! breakdown and its hints. Nothing here reads the device or writes a record, so each
//! decision is a function of this state and the figures handed in.

use crate::memory::policy::{offload_hints, Attempt, LimitExceeded, OffloadHint, OffloadView};
use crate::memory::policy::{Phase, RunState};
use crate::memory::{Breakdown, Footprint, Layout, MemorySource, Offloaded, PeakPhase};

/// What the guard decides with.
#[derive(Debug, Clone)]
pub(crate) struct Standing {
    layout: Layout,
    previous_attempt: Option<Attempt>,
    resting_estimate: u64,
    /// What the run's tensors hold by kind, for a breach's breakdown and the auto-offload.
    footprint: Option<Footprint>,
    /// Whether the step under way is in its update (after `before_update`): a breach there is
    /// the update's.
    in_update: bool,
}

impl Standing {
    /// A run at `layout`, before its first reading at rest.
    pub(super) fn new(layout: Layout) -> Self {
        Standing {
            layout,
            previous_attempt: None,
            resting_estimate: 0,
            footprint: None,
            in_update: false,
        }
    }

    /// The batch layout now.
    pub(super) fn layout(&self) -> Layout {
        self.layout
    }

    /// What the run's tensors hold by kind now, with what `"auto"` has moved since.
    pub(super) fn footprint(&self) -> Option<Footprint> {
        self.footprint
    }

    pub(super) fn set_footprint(&mut self, footprint: Footprint) {
        self.footprint = Some(footprint);
    }

    /// The optimizer's state the device holds, or will once the first update allocates it:
    /// none where it is in host memory.
    pub(super) fn device_state(&self) -> u64 {
        self.footprint.map_or(0, |f| f.device_optimizer())
    }

    /// What the policies see at step `step` of `epoch`.
    pub(super) fn state(&self, epoch: usize, step: usize) -> RunState {
        RunState {
            epoch,
            step,
            layout: self.layout,
            resting_estimate: self.resting_estimate,
            previous_attempt: self.previous_attempt,
        }
    }

    /// At the run's start: `in_use` now, and `to_come` bytes the first step allocates.
    pub(super) fn at_rest(&mut self, in_use: u64, to_come: u64) {
        self.resting_estimate = in_use + to_come;
    }

    /// A new step: no breached attempt behind it, not in its update.
    pub(super) fn begin_step(&mut self) {
        self.previous_attempt = None;
        self.in_update = false;
    }

    /// The step's update begins: a breach from here is the update's.
    pub(super) fn begin_update(&mut self) {
        self.in_update = true;
    }

    /// `on_limit = "fit"`: each loader batch cut into `factor` micro-batches.
    pub(super) fn fit(&mut self, factor: usize) {
        self.layout.factor = factor.max(1);
    }

    /// A breach of `observed` bytes answered by the policy's `layout`; returns the layout
    /// before it. The retry's policy sees the attempt that breached.
    pub(super) fn shrink(&mut self, observed: u64, layout: Layout) -> Layout {
        let before = self.layout;
        self.previous_attempt = Some(Attempt {
            accumulation_steps: before.micro_steps(),
            observed,
        });
        self.layout = layout;
        before
    }

    /// `part` kept in host memory from now on; returns the device bytes it held, where the
    /// footprint is known. What the run holds at rest on the device no longer counts it.
    pub(super) fn offload(&mut self, part: Offloaded) -> Option<u64> {
        self.layout.offload(part);
        let (sum, update) = (part == Offloaded::Gradients, part == Offloaded::Optimizer);
        let saved = self.footprint.map(|f| match part {
            Offloaded::Gradients => f.gradient_set(),
            Offloaded::Optimizer => f.optimizer,
        });
        let before = self.footprint;
        self.footprint = self.footprint.map(|f| f.placed(sum, update));
        if let (Some(before), Some(after)) = (before, self.footprint) {
            let device = |f: Footprint| f.gradients + f.device_optimizer();
            let moved = device(before) - device(after);
            self.resting_estimate = self.resting_estimate.saturating_sub(moved);
        }
        self.previous_attempt = None;
        saved
    }

    /// The auto-offload decisions' view of the run under `limit`: `None` without a limit or a
    /// footprint.
    pub(super) fn offload_view(&self, limit: Option<u64>) -> Option<OffloadView> {
        Some(OffloadView {
            layout: self.layout,
            footprint: self.footprint?,
            limit: limit?,
            resting_estimate: self.resting_estimate,
        })
    }

    /// What offload would save at breach `e` where `train.offload` does not allow it to act
    /// ([`offload_hints`]), on a device with memory of its own (`source`). Empty on flex.
    pub(super) fn offload_hints(
        &self,
        e: &LimitExceeded,
        source: MemorySource,
    ) -> Box<[OffloadHint]> {
        match (self.footprint, source) {
            (Some(f), MemorySource::CubeclPool) => {
                offload_hints(&f, &self.layout, e.accumulation_steps, self.in_update).into()
            }
            _ => Box::default(),
        }
    }

    /// The figure of breach `e` by category, where the run's footprint is known, after
    /// `steps_done` optimizer steps.
    pub(super) fn breakdown(&self, e: &LimitExceeded, steps_done: usize) -> Option<Breakdown> {
        let full = self.footprint?;
        // Before the first update the optimizer has no state yet; a probe before training
        // (`on_limit = "fit"`, step 0) and the estimate at rest count the state the first
        // update will allocate.
        let ahead = (e.phase == Phase::Step && e.step == 0) || e.phase == Phase::RunStart;
        let state = if steps_done == 0 && !ahead {
            0
        } else {
            full.optimizer
        };
        // In host memory the state is all there from the first update on, and not the device's.
        let state = match full.host_optimizer {
            true => full.optimizer,
            false => state,
        };
        // The gradient sets of the layout at the breach, which a shrink or a fit changed.
        let sets = if e.accumulation_steps > 1 && !full.host_sum {
            2
        } else {
            1
        };
        let f = Footprint {
            optimizer: state,
            gradients: full.gradients / full.gradient_sets.max(1) * sets,
            gradient_sets: sets,
            ..full
        };
        // At rest: what the run held at the start and the optimizer's state once it exists;
        // the gradients are part of the step's transient.
        let rest = self
            .resting_estimate
            .saturating_sub(full.gradients + full.device_optimizer() - f.device_optimizer());
        let phase = match e.phase {
            Phase::Step if self.in_update => PeakPhase::Update,
            Phase::RunStart | Phase::Step | Phase::RunEnd => PeakPhase::Backward,
            Phase::EpochEnd | Phase::Checkpoint => PeakPhase::Outside,
        };
        let mut breakdown = Breakdown::of(&f, rest.min(e.observed), e.observed, phase);
        if e.phase == Phase::RunStart {
            // An estimate at rest holds no step's activations.
            breakdown.estimated.retain(|c| c != "activations");
        }
        Some(breakdown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Offload;

    fn standing() -> Standing {
        let mut s = Standing::new(Layout {
            batch_size: 64,
            accumulation_steps: 2,
            factor: 1,
            gradients: Offload::Auto,
            optimizer: Offload::Auto,
        });
        s.set_footprint(Footprint {
            weights: 1000,
            gradients: 2000,
            gradient_sets: 2,
            optimizer: 3000,
            ..Footprint::default()
        });
        s.at_rest(5000, 4000);
        s
    }

    #[test]
    fn a_shrink_is_seen_by_the_retry_and_forgotten_by_the_next_step() {
        let mut s = standing();
        let half = Layout {
            factor: 2,
            ..s.layout()
        };
        let before = s.shrink(7777, half);
        assert_eq!((before.micro_batch(), s.layout().micro_batch()), (64, 32));
        let state = s.state(1, 4);
        let attempt = state.previous_attempt.expect("the breached attempt");
        assert_eq!((attempt.accumulation_steps, attempt.observed), (2, 7777));
        assert_eq!(state.resting_estimate, 9000);
        s.begin_step();
        assert!(s.state(1, 5).previous_attempt.is_none());
        assert_eq!(s.state(1, 5).layout.micro_batch(), 32, "the shrink stays");
    }

    #[test]
    fn an_offload_moves_its_bytes_out_of_what_the_device_holds_at_rest() {
        let mut s = standing();
        assert_eq!(s.device_state(), 3000);
        assert_eq!(s.offload(Offloaded::Optimizer), Some(3000));
        assert_eq!(s.device_state(), 0);
        assert_eq!(s.state(1, 1).resting_estimate, 6000);
        assert_eq!(s.layout().optimizer, Offload::Host);
        // The gradient sum: one set of two leaves the device.
        assert_eq!(s.offload(Offloaded::Gradients), Some(1000));
        assert_eq!(s.state(1, 1).resting_estimate, 5000);
        assert_eq!(s.footprint().map(|f| f.gradient_sets), Some(1));
        assert!(s.offload_view(None).is_none(), "no limit, no view");
        let view = s
            .offload_view(Some(10_000))
            .expect("a limit and a footprint");
        assert_eq!((view.limit, view.resting_estimate), (10_000, 5000));
    }
}
