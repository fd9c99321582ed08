//! The growth alarm: memory in use at epoch end that keeps rising is the classic leak (outputs
//! kept in a list, a graph kept alive), and it should be caught after two epochs, not at the
//! out-of-memory.

use serde::{Deserialize, Serialize};

/// Memory in use rising from epoch to epoch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GrowthAlarm {
    /// Least-squares slope of in-use bytes over the epoch ends so far.
    pub slope_bytes_per_epoch: f64,
    /// The epoch at which the alarm was first raised.
    pub epoch: usize,
    /// The rise tolerated per epoch, in bytes.
    pub tolerance_bytes: u64,
}

/// A rise of at most this share of in-use memory per epoch is noise (allocator jitter).
pub const GROWTH_TOLERANCE: f64 = 0.01;
/// ... and never less than this many bytes.
pub const GROWTH_TOLERANCE_MIN: u64 = 256 << 10;

/// Checks epoch-end in-use figures (`in_use[i]` after epoch `i + 1`). The alarm is raised when
/// each of the last two epoch-to-epoch changes (the only one, after epoch 2) is a rise larger
/// than the tolerance.
pub fn check_growth(in_use: &[u64]) -> Option<GrowthAlarm> {
    let recent = &in_use[in_use.len().saturating_sub(3)..];
    judge(recent, in_use.len(), || slope(in_use))
}

/// The alarm over the last (up to three) figures `recent` of `epochs`, with the slope over all.
fn judge(recent: &[u64], epochs: usize, slope: impl FnOnce() -> f64) -> Option<GrowthAlarm> {
    if epochs < 2 {
        return None;
    }
    let last = *recent.last().expect("non-empty");
    let tolerance = ((last as f64 * GROWTH_TOLERANCE) as u64).max(GROWTH_TOLERANCE_MIN);
    let rising = recent
        .windows(2)
        .all(|w| w[1] > w[0] && w[1] - w[0] > tolerance);
    rising.then(|| GrowthAlarm {
        slope_bytes_per_epoch: slope(),
        epoch: epochs,
        tolerance_bytes: tolerance,
    })
}

/// Epoch-end figures as a run goes, and the alarm once raised. Fixed-size: the last three
/// figures and the sums of a least-squares fit, so that a run's own records do not grow with
/// its epochs (what a run keeps after release is measured to the byte).
#[derive(Debug, Default)]
pub struct GrowthWatch {
    recent: [u64; 3],
    epochs: usize,
    sum_y: f64,
    sum_xy: f64,
    alarm: Option<GrowthAlarm>,
}

impl GrowthWatch {
    /// Adds the in-use figure after the next epoch; returns the alarm when it is first raised
    /// (later epochs refresh its slope and keep the epoch it was raised at).
    pub fn push(&mut self, in_use: u64) -> Option<GrowthAlarm> {
        let x = self.epochs as f64;
        self.epochs += 1;
        self.sum_y += in_use as f64;
        self.sum_xy += x * in_use as f64;
        self.recent = [self.recent[1], self.recent[2], in_use];
        let recent = &self.recent[3 - self.epochs.min(3)..];
        let mut alarm = judge(recent, self.epochs, || self.slope())?;
        let raised = match self.alarm {
            Some(first) => {
                alarm.epoch = first.epoch;
                None
            }
            None => Some(alarm),
        };
        self.alarm = Some(alarm);
        raised
    }

    /// The alarm, once raised.
    pub fn alarm(&self) -> Option<GrowthAlarm> {
        self.alarm
    }
}

/// Least-squares slope of `values` against their index.
impl GrowthWatch {
    /// The least-squares slope over every figure pushed, from the running sums (x = 0..n).
    fn slope(&self) -> f64 {
        let n = self.epochs as f64;
        let sum_x = n * (n - 1.0) / 2.0;
        let sum_xx = (n - 1.0) * n * (2.0 * n - 1.0) / 6.0;
        (n * self.sum_xy - sum_x * self.sum_y) / (n * sum_xx - sum_x * sum_x)
    }
}

fn slope(values: &[u64]) -> f64 {
    let n = values.len() as f64;
    let mean_x = (n - 1.0) / 2.0;
    let mean_y = values.iter().map(|&v| v as f64).sum::<f64>() / n;
    let (mut num, mut den) = (0.0, 0.0);
    for (i, &v) in values.iter().enumerate() {
        let dx = i as f64 - mean_x;
        num += dx * (v as f64 - mean_y);
        den += dx * dx;
    }
    num / den
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn the_watch_raises_what_the_whole_series_check_raises() {
        // Flat, then a leak of 3 MiB an epoch with jitter, then flat again.
        let series: Vec<u64> = (0..40u64)
            .map(|i| 100 * MIB + (i.clamp(5, 25) - 5) * 3 * MIB + (i * 7919 % 13) * 1000)
            .collect();
        let mut watch = GrowthWatch::default();
        let mut first = None;
        for (i, &v) in series.iter().enumerate() {
            let raised = watch.push(v);
            let full = check_growth(&series[..=i]);
            if first.is_none() {
                first = full;
                assert_eq!(
                    raised.map(|a| a.epoch),
                    full.map(|a| a.epoch),
                    "epoch {}",
                    i + 1
                );
            }
            if let (Some(w), Some(f)) = (watch.alarm(), full) {
                let (a, b) = (w.slope_bytes_per_epoch, f.slope_bytes_per_epoch);
                assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{a} vs {b}");
            }
        }
        assert_eq!(first.map(|a| a.epoch), Some(8), "caught at the second rise");
    }

    #[test]
    fn steady_memory_raises_nothing() {
        assert_eq!(
            check_growth(&[30 * MIB, 30 * MIB + 1000, 30 * MIB - 500, 30 * MIB]),
            None
        );
        assert_eq!(check_growth(&[30 * MIB]), None);
    }

    #[test]
    fn a_leak_is_caught_after_epoch_two_with_its_slope() {
        let alarm = check_growth(&[30 * MIB, 34 * MIB]).expect("caught after epoch 2");
        assert_eq!(alarm.epoch, 2);
        assert!((alarm.slope_bytes_per_epoch - (4 * MIB) as f64).abs() < 1.0);
        let alarm = check_growth(&[30 * MIB, 32 * MIB, 34 * MIB, 36 * MIB]).unwrap();
        assert!((alarm.slope_bytes_per_epoch - (2 * MIB) as f64).abs() < 1.0);
    }

    #[test]
    fn one_step_up_then_flat_is_not_a_leak() {
        // Memory that settles (a cache filled once) stops the alarm at the next epoch.
        assert!(check_growth(&[30 * MIB, 34 * MIB, 34 * MIB]).is_none());
        // Rises within the tolerance are noise.
        assert!(check_growth(&[100 * MIB, 100 * MIB + 500_000, 100 * MIB + 1_000_000]).is_none());
    }
}
