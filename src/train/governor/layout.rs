//! The batch layout a limit may shrink, a step's breach, and an epoch's figures.

use std::collections::BTreeMap;

use crate::memory::Footprint;

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

/// An epoch's figures for its snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EpochFigures {
    /// Mean training loss.
    pub loss: Option<f64>,
    /// Mean validation loss.
    pub val_loss: Option<f64>,
    /// Training samples per second.
    pub samples_per_sec: Option<f64>,
    /// With loss scaling: the scale now, and the steps skipped this epoch.
    pub loss_scale: Option<(f64, u64)>,
    /// The learning rate of the epoch's last step.
    pub lr: Option<f64>,
    /// With gradient clipping: the steps clipped this epoch.
    pub clipped_steps: Option<u64>,
    /// Metrics by key (`val_accuracy`, `train_mae`, ...).
    pub metrics: BTreeMap<String, f64>,
    /// What the run's tensors hold by kind, for the snapshot's `breakdown`.
    pub footprint: Option<Footprint>,
}
