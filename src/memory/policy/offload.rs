//! `train.offload.* = "auto"`'s decisions, pure: from the run's layout, its footprint, the
//! limit and the figures read, which part of the step moves to host memory (the gradient sum
//! first, where the step has one, then the optimizer's state), and why; and what offload would
//! save where it may not act. The trainer's guard reads the device and carries them out.

use super::limit::OffloadHint;
use crate::config::Offload;
use crate::memory::{format_bytes, Footprint, Layout, Offloaded};

/// What the decisions look at: the run as it stands.
#[derive(Debug, Clone, Copy)]
pub struct OffloadView {
    /// The step's layout now: what `"auto"` may still move.
    pub layout: Layout,
    /// What the run holds, by part, in its layout.
    pub footprint: Footprint,
    /// The memory limit, in bytes.
    pub limit: u64,
    /// What the run holds at rest on the device once training has started.
    pub resting_estimate: u64,
}

/// A part to move to host memory, and why, for the run's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffloadDecision {
    /// The part.
    pub part: Offloaded,
    /// Why, said with the figures: `... over the limit at step 3, where halving ...`.
    pub why: String,
}

impl OffloadView {
    /// Before the run's first update, which allocates the optimizer's state: where
    /// `train.offload.optimizer = "auto"` and what is `held` now plus that state would break
    /// the limit, the state goes to host memory before it exists.
    pub fn state_to_come(&self, held: u64, step: usize) -> Option<OffloadDecision> {
        let state = self.footprint.device_optimizer();
        if self.layout.optimizer != Offload::Auto || state == 0 || held + state <= self.limit {
            return None;
        }
        let why = format!(
            "{} held before the first update, which would add {} of optimizer state at step \
             {step}",
            format_bytes(held),
            format_bytes(state)
        );
        Some(OffloadDecision {
            part: Offloaded::Optimizer,
            why,
        })
    }

    /// At a breach of `observed` bytes in step `step` that `on_limit = "shrink"` would answer
    /// by halving the micro-batch: the next part `"auto"` may move, where halving cannot pay
    /// for the overshoot. Halving saves at most half of what the step had `in_use` beyond what
    /// the run holds at rest (its activations), and the first halving of a step that does not
    /// accumulate adds a gradient set.
    pub fn before_shrink(
        &self,
        observed: u64,
        in_use: u64,
        step: usize,
    ) -> Option<OffloadDecision> {
        let part = self.layout.next_offload()?;
        // What halving frees is bytes in use (on pools the breach is read in pages, which a
        // smaller step does not give back by halves).
        let halving_saves = in_use.min(observed).saturating_sub(self.resting_estimate) / 2;
        let adds = match self.layout.micro_steps() == 1 && !self.footprint.host_sum {
            true => self.footprint.gradient_set(),
            false => 0,
        };
        if halving_saves >= observed.saturating_sub(self.limit) + adds {
            return None;
        }
        let why = format!(
            "{} over the limit at step {step}, where halving the micro-batch saves at most {}",
            format_bytes(observed),
            format_bytes(halving_saves.saturating_sub(adds))
        );
        Some(OffloadDecision { part, why })
    }
}

/// What offload would save at a breach where `train.offload` does not allow it to act, on a
/// device with memory of its own: each part still on the device with what it holds there
/// (`[train.ema]`'s average among them).
/// The step's sum is one only where it accumulates (`accumulation_steps > 1`) and the breach
/// is not in the update, where the sum is the one gradient set left.
pub fn offload_hints(
    footprint: &Footprint,
    layout: &Layout,
    accumulation_steps: usize,
    in_update: bool,
) -> Vec<OffloadHint> {
    let mut hints = Vec::new();
    let sum_on_device = !footprint.host_sum && accumulation_steps > 1 && !in_update;
    if sum_on_device && layout.gradients == Offload::None {
        hints.push(OffloadHint {
            key: Offloaded::Gradients.key(),
            saves: footprint.gradient_set(),
        });
    }
    if !footprint.host_optimizer && footprint.optimizer > 0 && layout.optimizer == Offload::None {
        hints.push(OffloadHint {
            key: Offloaded::Optimizer.key(),
            saves: footprint.optimizer,
        });
    }
    // `[train.ema]`'s average, which the device holds for validation alone.
    if footprint.device_average() > 0 {
        hints.push(OffloadHint {
            key: "train.ema.device",
            saves: footprint.average,
        });
    }
    hints
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    /// 8 MiB of weights, 8 MiB per gradient set (two with accumulation), 16 MiB of state.
    fn footprint(sets: u64) -> Footprint {
        Footprint {
            weights: 8 * MIB,
            compute_copy: 0,
            gradients: 8 * MIB * sets,
            gradient_sets: sets,
            host_sum: false,
            optimizer: 16 * MIB,
            host_optimizer: false,
            data: None,
            average: 0,
            host_average: false,
        }
    }

    fn auto(accumulation_steps: usize) -> Layout {
        Layout {
            gradients: Offload::Auto,
            optimizer: Offload::Auto,
            ..Layout::new(64, accumulation_steps)
        }
    }

    fn view(layout: Layout, sets: u64) -> OffloadView {
        OffloadView {
            layout,
            footprint: footprint(sets),
            limit: 100 * MIB,
            resting_estimate: 40 * MIB,
        }
    }

    #[test]
    fn the_state_to_come_moves_only_where_it_would_break_the_limit() {
        let v = view(auto(1), 1);
        assert_eq!(v.state_to_come(84 * MIB, 1), None, "84 + 16 fits in 100");
        let moved = v.state_to_come(85 * MIB, 1).unwrap();
        assert_eq!(moved.part, Offloaded::Optimizer);
        assert!(
            moved
                .why
                .starts_with("85.0 MiB held before the first update"),
            "{}",
            moved.why
        );
        assert!(
            moved.why.ends_with("16.0 MiB of optimizer state at step 1"),
            "{}",
            moved.why
        );
        let fixed = view(Layout::new(64, 1), 1);
        assert_eq!(fixed.state_to_come(99 * MIB, 1), None, "not \"auto\"");
    }

    #[test]
    fn a_breach_halving_can_answer_is_left_to_the_shrink() {
        // Accumulating: the gradient sum moves first. 120 in use, 40 at rest: halving frees
        // 40, which covers 10 over the limit but not 50.
        let v = view(auto(4), 2);
        assert_eq!(v.before_shrink(110 * MIB, 120 * MIB, 3), None);
        let moved = v.before_shrink(150 * MIB, 120 * MIB, 3).unwrap();
        assert_eq!(moved.part, Offloaded::Gradients);
        assert_eq!(
            moved.why,
            "150.0 MiB over the limit at step 3, where halving the micro-batch saves at most \
             40.0 MiB"
        );
        // Not accumulating: the first halving adds a gradient set (8 MiB), and the optimizer's
        // state is the one part to move.
        let v = view(auto(1), 1);
        let moved = v.before_shrink(135 * MIB, 120 * MIB, 3).unwrap();
        assert_eq!(moved.part, Offloaded::Optimizer);
        assert!(
            moved.why.ends_with("saves at most 32.0 MiB"),
            "{}",
            moved.why
        );
        assert_eq!(
            view(Layout::new(64, 4), 2).before_shrink(500 * MIB, 120 * MIB, 3),
            None
        );
    }

    #[test]
    fn hints_name_what_is_still_on_the_device() {
        let keys = |h: Vec<OffloadHint>| h.iter().map(|h| (h.key, h.saves)).collect::<Vec<_>>();
        let layout = Layout::new(64, 4);
        assert_eq!(
            keys(offload_hints(&footprint(2), &layout, 4, false)),
            [
                ("train.offload.gradients", 8 * MIB),
                ("train.offload.optimizer", 16 * MIB)
            ]
        );
        // In the update, or without accumulation, the sum is no saving.
        assert_eq!(
            keys(offload_hints(&footprint(2), &layout, 4, true)),
            [("train.offload.optimizer", 16 * MIB)]
        );
        let moved = Footprint {
            host_optimizer: true,
            ..footprint(1)
        };
        assert!(offload_hints(&moved, &layout, 1, false).is_empty());
        // A moving average on the device can go to host memory too; there, it is no lever.
        let averaged = Footprint {
            average: 4 * MIB,
            ..moved
        };
        assert_eq!(
            keys(offload_hints(&averaged, &layout, 1, false)),
            [("train.ema.device", 4 * MIB)]
        );
        let on_host = Footprint {
            host_average: true,
            ..averaged
        };
        assert!(offload_hints(&on_host, &layout, 1, false).is_empty());
    }
}
