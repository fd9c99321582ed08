//! What a recorder counts over its run: the peaks, the memory actions, the growth watch, what
//! stayed after release, and the highest step figures by phase that the advisor starts from.

use crate::memory::Peaks;
use crate::record::{GrowthAlarm, GrowthWatch, Retained};

/// A run's memory statistics, as its [`RunRecorder`](super::RunRecorder) counted them.
#[derive(Debug, Default)]
pub struct MemoryStats {
    /// The highest figure in use recorded (epochs, checkpoints, the run's end).
    pub peak_bytes_in_use: u64,
    /// The highest figure reserved recorded.
    pub peak_bytes_reserved: u64,
    /// `memory_action` events written.
    pub memory_actions: usize,
    /// What the run kept after releasing everything, once the run has ended.
    pub retained: Option<Retained>,
    /// The run's highest step figures by phase, and its highest epoch peak.
    pub run_peaks: Peaks,
    pub(super) growth: GrowthWatch,
}

impl MemoryStats {
    /// The growth alarm, once raised.
    pub fn growth_alarm(&self) -> Option<GrowthAlarm> {
        self.growth.alarm()
    }
}
