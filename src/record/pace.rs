//! An epoch's pace, step by step: how long its steps took, and how often they waited for the
//! device or read its memory (see [`DeviceCounts`](crate::memory::DeviceCounts)).

use serde::{Deserialize, Serialize};

/// An epoch line's `pace`.
///
/// A step's time runs from the end of the step before it (the epoch's start, for its first)
/// to the end of its own, its batch's loading included. Steps that read nothing from the
/// device end when their work is queued, not done; with `run.log_every_steps = 1` every step
/// reads its loss, so each step's time is the device's too (a synchronised step).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pace {
    /// The epoch's first step: on a CubeCL device, the first epoch's holds compiling the
    /// step's kernels (the warm-up).
    pub first_step_ms: f64,
    /// The median of the epoch's other steps (`null` for an epoch of one step).
    pub median_step_ms: Option<f64>,
    /// Waits for the device per step, over the epoch's steps.
    pub syncs_per_step: f64,
    /// Reads of the device's memory pools per step (0 on flex, whose figures are tidemark's
    /// own counters).
    pub memory_reads_per_step: f64,
}

impl Pace {
    /// The pace of steps that took `step_ms` (in order), with `syncs` and `memory_reads`
    /// counted over them; `None` for no step.
    pub fn of(step_ms: &[f64], syncs: u64, memory_reads: u64) -> Option<Pace> {
        let (&first, rest) = step_ms.split_first()?;
        let mut rest = rest.to_vec();
        rest.sort_by(f64::total_cmp);
        let median = match rest.len() {
            0 => None,
            n if n % 2 == 1 => Some(rest[n / 2]),
            n => Some((rest[n / 2 - 1] + rest[n / 2]) / 2.0),
        };
        let steps = step_ms.len() as f64;
        Some(Pace {
            first_step_ms: first,
            median_step_ms: median,
            syncs_per_step: syncs as f64 / steps,
            memory_reads_per_step: memory_reads as f64 / steps,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_step_stands_apart_and_the_rest_give_the_median() {
        let pace = Pace::of(&[900.0, 3.0, 1.0, 2.0, 10.0], 10, 15).unwrap();
        assert_eq!(pace.first_step_ms, 900.0);
        assert_eq!(pace.median_step_ms, Some(2.5));
        assert_eq!(
            (pace.syncs_per_step, pace.memory_reads_per_step),
            (2.0, 3.0)
        );
        assert_eq!(
            Pace::of(&[5.0, 1.0, 9.0, 3.0], 0, 0)
                .unwrap()
                .median_step_ms,
            Some(3.0)
        );
        assert_eq!(Pace::of(&[5.0], 0, 0).unwrap().median_step_ms, None);
        assert_eq!(Pace::of(&[], 0, 0), None);
    }
}
