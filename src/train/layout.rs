//! The batch layout: how a step's samples are cut, which a limit may shrink. The guard
//! changes it; the recorder writes it in each snapshot.

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
