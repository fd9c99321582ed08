//! The batch layout a limit may shrink, and a step's breach.

use crate::memory::policy::LimitExceeded;

/// How a step's samples are cut: the configured micro-batch and accumulation, and how many
/// times a limit has halved the micro-batch since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Samples per loader batch (`train.batch_size`).
    pub batch_size: usize,
    /// Loader batches per optimizer step (`train.accumulation_steps`).
    pub accumulation_steps: usize,
    /// Each loader batch is split into this many micro-batches (doubled by each shrink).
    pub factor: usize,
}

impl Layout {
    /// The configured layout, unshrunk.
    pub fn new(batch_size: usize, accumulation_steps: usize) -> Self {
        Self {
            batch_size,
            accumulation_steps,
            factor: 1,
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
}

/// A step that the limit stopped before the optimizer update.
#[derive(Debug, Clone, PartialEq)]
pub enum Breach {
    /// `on_limit = "shrink"`: halve the micro-batch and retry the step.
    Shrink {
        /// The figure that breached.
        observed: u64,
    },
    /// Stop the run.
    Fail(LimitExceeded),
}
