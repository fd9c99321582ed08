//! The batch layout: how a step's samples are cut, which a limit may shrink, and what the
//! step keeps in host memory, which a limit may move there (`train.offload.* = "auto"`). The
//! limit policy decides the layout a shrink retries at; the trainer's guard applies it, and
//! its recorder writes it in each snapshot.

use crate::config::{Offload, OffloadConfig};

/// How a step's samples are cut: the configured micro-batch and accumulation, and how many
/// times a limit has halved the micro-batch since; and where the gradient sum and the
/// optimizer's update are now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Samples per loader batch (`train.batch_size`).
    pub batch_size: usize,
    /// Loader batches per optimizer step (`train.accumulation_steps`).
    pub accumulation_steps: usize,
    /// Each loader batch is split into this many micro-batches (doubled by each shrink).
    pub factor: usize,
    /// Where the step's gradient sum is kept: `Auto` until a limit moves it to `Host`.
    pub gradients: Offload,
    /// Where the optimizer's state is kept and its update runs: `Auto` until a limit moves
    /// it to `Host`.
    pub optimizer: Offload,
}

/// A part of the step that `"auto"` may move to host memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offloaded {
    /// The gradient sum (`train.offload.gradients`).
    Gradients,
    /// The optimizer's state and update (`train.offload.optimizer`).
    Optimizer,
}

impl Offloaded {
    /// The config key that moves it.
    pub fn key(self) -> &'static str {
        match self {
            Offloaded::Gradients => "train.offload.gradients",
            Offloaded::Optimizer => "train.offload.optimizer",
        }
    }
}

impl Layout {
    /// The configured layout, unshrunk, with nothing offloaded.
    pub const fn new(batch_size: usize, accumulation_steps: usize) -> Self {
        Self {
            batch_size,
            accumulation_steps,
            factor: 1,
            gradients: Offload::None,
            optimizer: Offload::None,
        }
    }

    /// This layout with `offload`'s places: `Host` from the start, `Auto` when a limit says.
    /// `own_memory`: whether the device has memory of its own; on one that has not (flex),
    /// `Auto` has nothing to move and stays on the device.
    pub fn with_offload(self, offload: &OffloadConfig, own_memory: bool) -> Self {
        let place = |p: Offload| match p {
            Offload::Auto if !own_memory => Offload::None,
            p => p,
        };
        Self {
            gradients: place(offload.gradients),
            optimizer: place(offload.optimizer),
            ..self
        }
    }

    /// This layout with the micro-batch halved (rounded up) and twice the micro-batches: the
    /// same effective batch.
    pub fn halved(self) -> Self {
        Self {
            factor: self.factor * 2,
            ..self
        }
    }

    /// Samples per micro-batch now.
    pub fn micro_batch(&self) -> usize {
        self.batch_size.div_ceil(self.factor)
    }

    /// Micro-batches per optimizer step now.
    pub fn micro_steps(&self) -> usize {
        self.accumulation_steps * self.factor
    }

    /// Whether the step's gradient sum is kept in host memory now (a step of one micro-batch
    /// has no sum to keep: its gradients are its own).
    pub fn sum_on_host(&self) -> bool {
        self.gradients == Offload::Host && self.micro_steps() > 1
    }

    /// Whether the optimizer's state lives, and its update runs, in host memory now.
    pub fn optimizer_on_host(&self) -> bool {
        self.optimizer == Offload::Host
    }

    /// The next part that `"auto"` may still move to host memory and that would save device
    /// memory now: the gradient sum (where there is one), then the optimizer's state.
    pub fn next_offload(&self) -> Option<Offloaded> {
        if self.gradients == Offload::Auto && self.micro_steps() > 1 {
            Some(Offloaded::Gradients)
        } else if self.optimizer == Offload::Auto {
            Some(Offloaded::Optimizer)
        } else {
            None
        }
    }

    /// Moves `part` to host memory from now on.
    pub fn offload(&mut self, part: Offloaded) {
        match part {
            Offloaded::Gradients => self.gradients = Offload::Host,
            Offloaded::Optimizer => self.optimizer = Offload::Host,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auto() -> OffloadConfig {
        OffloadConfig {
            gradients: Offload::Auto,
            optimizer: Offload::Auto,
        }
    }

    #[test]
    fn auto_moves_the_sum_first_then_the_optimizer_and_nothing_on_flex() {
        let mut layout = Layout::new(64, 1).with_offload(&auto(), true);
        // No sum to keep at one micro-batch a step: the optimizer goes first.
        assert_eq!(layout.next_offload(), Some(Offloaded::Optimizer));
        layout.factor = 2;
        assert_eq!(layout.next_offload(), Some(Offloaded::Gradients));
        layout.offload(Offloaded::Gradients);
        assert!(layout.sum_on_host() && !layout.optimizer_on_host());
        assert_eq!(layout.next_offload(), Some(Offloaded::Optimizer));
        layout.offload(Offloaded::Optimizer);
        assert!(layout.optimizer_on_host());
        assert_eq!(layout.next_offload(), None);
        // On flex there is no device memory to move from: "auto" stays on the device.
        let flex = Layout::new(64, 4).with_offload(&auto(), false);
        assert_eq!(
            (flex.gradients, flex.optimizer),
            (Offload::None, Offload::None)
        );
        assert_eq!(flex.next_offload(), None);
    }
}
