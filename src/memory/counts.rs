//! How often this process waits for a device, and how often it reads the device's memory
//! pools: the two things a training loop does that a fast device can feel on every step.
//!
//! A *sync* is a call that returns only after the device has run everything queued before it:
//! [`Device::sync`](burn::tensor::Device::sync) and every read of a tensor's values (a loss, a
//! metric, loss scaling's overflow flag). A *memory read* is one memory report from CubeCL's
//! pools: it waits for the device's own thread to answer, not for the device's work. Flex has
//! neither cost (its figures are tidemark's counters), and its memory reads are not counted.
//!
//! The counts are the process's since it started; an epoch's are the difference of two
//! [`DeviceCounts::now`]. Each is one relaxed atomic add.

use std::sync::atomic::{AtomicU64, Ordering};

static SYNCS: AtomicU64 = AtomicU64::new(0);
static MEMORY_READS: AtomicU64 = AtomicU64::new(0);

/// Counts one wait for the device.
pub(crate) fn synced() {
    SYNCS.fetch_add(1, Ordering::Relaxed);
}

/// Counts one read of the device's memory pools.
pub(crate) fn read_pools() {
    MEMORY_READS.fetch_add(1, Ordering::Relaxed);
}

/// Syncs and memory reads so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceCounts {
    /// Waits for the device.
    pub syncs: u64,
    /// Reads of its memory pools.
    pub memory_reads: u64,
}

impl DeviceCounts {
    /// The process's counts now.
    pub fn now() -> Self {
        Self {
            syncs: SYNCS.load(Ordering::Relaxed),
            memory_reads: MEMORY_READS.load(Ordering::Relaxed),
        }
    }

    /// What was counted since `earlier`.
    pub fn since(self, earlier: Self) -> Self {
        Self {
            syncs: self.syncs.saturating_sub(earlier.syncs),
            memory_reads: self.memory_reads.saturating_sub(earlier.memory_reads),
        }
    }
}
