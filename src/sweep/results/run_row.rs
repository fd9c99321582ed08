//! One run's row in a sweep: what it took and what it gave back, from its summary, and the
//! release criteria it is judged by.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::record::{Retained, RunSummary};

/// Tolerance for bytes kept after release, as a share of the run's peak.
pub const RETAINED_TOLERANCE: f64 = 0.01;
/// Tolerance for resident memory kept after release (runs 2..N), as a share of what the run
/// added at its peak.
pub const RSS_TOLERANCE: f64 = 0.05;
/// Resident memory kept that is noise whatever the run added: the resident set moves by whole
/// pages and allocator chunks, so a run that adds 100 KiB and keeps 100 KiB has not leaked.
pub const RSS_NOISE_BYTES: u64 = 1 << 20;

/// One run of a sweep.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepRow {
    /// 1-based run number.
    pub run: usize,
    /// The run directory.
    pub run_dir: PathBuf,
    /// Final training loss.
    pub final_loss: Option<f64>,
    /// Peak bytes in use.
    pub peak_bytes_in_use: u64,
    /// Bytes reserved after the run released its memory.
    pub reserved_at_end: u64,
    /// Bytes in use after release minus before the run.
    pub retained_bytes_in_use: i64,
    /// Bytes reserved after release minus before the run.
    pub retained_bytes_reserved: i64,
    /// Process resident set before the run.
    pub rss_before_bytes: u64,
    /// Peak process resident set during the run.
    pub rss_peak_bytes: u64,
    /// Process resident set after the release.
    pub rss_after_bytes: u64,
    /// The first run of its process, which carries the process's one-time state.
    #[serde(default)]
    pub first_in_process: bool,
}

impl SweepRow {
    /// `retained_bytes_in_use` as a share of the run's peak.
    pub fn retained_share(&self) -> f64 {
        self.retained_bytes_in_use.max(0) as f64 / self.peak_bytes_in_use.max(1) as f64
    }

    /// Resident memory kept: (after − before) / (peak − before).
    pub fn rss_share(&self) -> f64 {
        let taken = self
            .rss_peak_bytes
            .saturating_sub(self.rss_before_bytes)
            .max(1) as f64;
        (self.rss_after_bytes as f64 - self.rss_before_bytes as f64).max(0.0) / taken
    }

    /// Whether this run meets both release criteria (the RSS one from run 2 on).
    pub fn released(&self) -> bool {
        let kept = self.rss_after_bytes.saturating_sub(self.rss_before_bytes);
        self.retained_share() <= RETAINED_TOLERANCE
            && (self.run == 1
                || self.first_in_process
                || kept <= RSS_NOISE_BYTES
                || self.rss_share() <= RSS_TOLERANCE)
    }
}

impl SweepRow {
    /// Run `run`'s row, from its summary.
    pub(crate) fn of(run: usize, summary: RunSummary) -> Self {
        let retained = summary.retained.unwrap_or(Retained {
            retained_bytes_in_use: 0,
            retained_bytes_reserved: 0,
            rss_before_bytes: 0,
            rss_peak_bytes: 0,
            rss_after_bytes: 0,
        });
        SweepRow {
            run,
            run_dir: summary.run_dir,
            final_loss: summary.final_loss,
            peak_bytes_in_use: summary.peak_bytes_in_use,
            reserved_at_end: (retained.retained_bytes_reserved
                + summary.baseline_bytes_reserved as i64)
                .max(0) as u64,
            retained_bytes_in_use: retained.retained_bytes_in_use,
            retained_bytes_reserved: retained.retained_bytes_reserved,
            rss_before_bytes: retained.rss_before_bytes,
            rss_peak_bytes: retained.rss_peak_bytes,
            rss_after_bytes: retained.rss_after_bytes,
            first_in_process: summary.run_in_process == 1,
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::sweep) fn row(run: usize, retained: i64, rss: (u64, u64, u64)) -> SweepRow {
        SweepRow {
            run,
            run_dir: PathBuf::new(),
            final_loss: Some(0.5),
            peak_bytes_in_use: 1000,
            reserved_at_end: 0,
            retained_bytes_in_use: retained,
            retained_bytes_reserved: 0,
            rss_before_bytes: rss.0,
            rss_peak_bytes: rss.1,
            rss_after_bytes: rss.2,
            first_in_process: false,
        }
    }

    #[test]
    fn criteria_follow_the_documented_shares() {
        let mib = 1 << 20;
        let rss = |before: u64, peak: u64, after: u64| (before * mib, peak * mib, after * mib);
        assert!(row(2, 10, rss(100, 300, 110)).released());
        assert!(!row(2, 11, rss(100, 300, 100)).released(), "1.1% retained");
        assert!(
            !row(2, 0, rss(100, 300, 111)).released(),
            "5.5% of RSS kept"
        );
        // A small run's resident set moving by 1 MiB or less is noise, not a leak.
        assert!(row(2, 0, (100 * mib, 100 * mib + 1, 101 * mib)).released());
        assert!(!row(2, 0, (100 * mib, 140 * mib, 102 * mib + 1)).released());
        assert!(
            row(1, 0, rss(100, 300, 200)).released(),
            "run 1 may keep one-time state"
        );
        assert!((row(2, 0, rss(100, 300, 150)).rss_share() - 0.25).abs() < 1e-9);
    }
}
