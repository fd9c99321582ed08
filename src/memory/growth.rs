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
    if in_use.len() < 2 {
        return None;
    }
    let last = *in_use.last().expect("non-empty");
    let tolerance = ((last as f64 * GROWTH_TOLERANCE) as u64).max(GROWTH_TOLERANCE_MIN);
    let recent = &in_use[in_use.len().saturating_sub(3)..];
    let rising = recent
        .windows(2)
        .all(|w| w[1] > w[0] && w[1] - w[0] > tolerance);
    rising.then(|| GrowthAlarm {
        slope_bytes_per_epoch: slope(in_use),
        epoch: in_use.len(),
        tolerance_bytes: tolerance,
    })
}

/// Epoch-end figures as a run goes, and the alarm once raised.
#[derive(Debug, Default)]
pub struct GrowthWatch {
    in_use: Vec<u64>,
    alarm: Option<GrowthAlarm>,
}

impl GrowthWatch {
    /// Adds the in-use figure after the next epoch; returns the alarm when it is first raised
    /// (later epochs refresh its slope and keep the epoch it was raised at).
    pub fn push(&mut self, in_use: u64) -> Option<GrowthAlarm> {
        self.in_use.push(in_use);
        let mut alarm = check_growth(&self.in_use)?;
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
