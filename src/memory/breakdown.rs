//! Where an epoch's peak went: bytes by category.
//!
//! The loop knows three categories from the tensors' own sizes before the first step: the
//! weights (and the low-precision copy a mixed-precision step makes of them), the gradients (one f32 set, two with
//! accumulation: the sum so far and the micro-batch's own) and the optimizer's state. On flex
//! it also knows the dataset's bytes, counted by the allocator as it loaded. What the epoch's
//! figures add is the rest:
//!
//! - `other` = in use at the epoch's end − weights − optimizer − data: the backend's
//!   workspace, the process's own allocations, anything held between steps;
//! - the step's transient = peak − in use at the epoch's end, of which the gradients and the
//!   compute copy (counted with the weights) are parts and `activations` the remainder (the
//!   forward's saved tensors, the batch in flight).
//!
//! The split of the transient is a model (marked `estimated`): whether a whole gradient set is
//! alive at the moment of the peak depends on the backward pass.

use serde::{Deserialize, Serialize};

use super::footprint::Footprint;
use super::usage::format_bytes;

/// Where in an epoch its peak fell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeakPhase {
    /// In a step's forward and backward passes.
    #[default]
    Backward,
    /// In the optimizer's update, after the backward passes.
    Update,
    /// Outside the steps: validation or a checkpoint.
    Outside,
}

/// The highest figures of an epoch's steps, by phase: where its peak fell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StepPeaks {
    /// The highest peak of the forward and backward passes.
    pub backward: u64,
    /// The highest peak of the updates alone (each in its own window).
    pub update: u64,
}

impl StepPeaks {
    /// Where `peak` fell.
    pub fn phase_of(&self, peak: u64) -> PeakPhase {
        if peak <= self.backward {
            PeakPhase::Backward
        } else if peak <= self.update {
            PeakPhase::Update
        } else {
            PeakPhase::Outside
        }
    }
}

/// An epoch's peak by category, in bytes. The categories sum to the peak unless the known
/// ones exceed what was in use (then `other` is 0 and the sum is over).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Breakdown {
    /// Where the peak fell: `backward`, `update` or `outside` (validation, a checkpoint).
    #[serde(default)]
    pub phase: PeakPhase,
    /// Parameters, their compute copy during a mixed-precision step, and `[train.ema]`'s
    /// moving average where the device holds it.
    pub weights: u64,
    /// Gradients held at the step's peak.
    pub gradients: u64,
    /// The optimizer's state, and the update's temporaries when the peak is in the update.
    pub optimizer: u64,
    /// The dataset held in memory.
    pub data: u64,
    /// The step's transient beyond the gradients: activations saved for backward, the batch.
    pub activations: u64,
    /// Everything else in use: the backend's workspace and the process's own allocations.
    pub other: u64,
    /// Held in host memory by offload (the gradient sum, the optimizer's state and the
    /// master weights): not part of the device's figure, and not in the total.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub host: u64,
    /// The categories that are estimates rather than counts.
    pub estimated: Vec<String>,
}

impl Breakdown {
    /// The breakdown of a peak of `peak` bytes that fell in `phase`, with `rest` in use after
    /// the epoch (no step running), for a run whose tensors hold `footprint`.
    ///
    /// In the backward passes the transient is the gradient sets, the compute copy and the
    /// activations. In the update the activations are gone: one gradient set (the step's sum)
    /// and the update's temporaries, counted with the optimizer. Outside the steps
    /// (validation) it is activations alone.
    pub fn of(footprint: &Footprint, rest: u64, peak: u64, phase: PeakPhase) -> Self {
        let data = footprint.data.unwrap_or(0);
        let state = footprint.device_optimizer();
        let average = footprint.device_average();
        let known = footprint.weights + average + state + data;
        let transient = peak.saturating_sub(rest);
        let one_set = footprint.gradient_set();
        let (gradients, copy, update) = match phase {
            PeakPhase::Backward => {
                let gradients = footprint.gradients.min(transient);
                (
                    gradients,
                    footprint.compute_copy.min(transient - gradients),
                    0,
                )
            }
            PeakPhase::Update => {
                let gradients = one_set.min(transient);
                (gradients, 0, transient - gradients)
            }
            PeakPhase::Outside => (0, 0, 0),
        };
        let mut estimated = match phase {
            PeakPhase::Backward => vec!["gradients", "activations"],
            PeakPhase::Update => vec!["gradients", "optimizer"],
            PeakPhase::Outside => vec!["activations"],
        };
        if footprint.data.is_none() {
            estimated.push("data");
        }
        Self {
            phase,
            weights: footprint.weights + average + copy,
            gradients,
            optimizer: state + update,
            data,
            activations: transient - gradients - copy - update,
            other: rest.saturating_sub(known),
            host: footprint.host_bytes(),
            estimated: estimated.into_iter().map(String::from).collect(),
        }
    }

    /// The categories' sum.
    pub fn total(&self) -> u64 {
        self.weights + self.gradients + self.optimizer + self.data + self.activations + self.other
    }

    /// The categories by name, largest first.
    pub fn ranked(&self) -> Vec<(&'static str, u64)> {
        let mut all = vec![
            ("weights", self.weights),
            ("gradients", self.gradients),
            ("optimizer", self.optimizer),
            ("data", self.data),
            ("activations", self.activations),
            ("other", self.other),
        ];
        all.sort_by_key(|&(_, bytes)| std::cmp::Reverse(bytes));
        all
    }
}

/// `activations 40.0 MiB (40%), weights 10.0 MiB (10%), ... (estimated: gradients, activations)`:
/// the categories largest first, the empty ones left out.
impl std::fmt::Display for Breakdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = match self.phase {
            PeakPhase::Backward => "in the backward pass",
            PeakPhase::Update => "in the optimizer's update",
            PeakPhase::Outside => "outside the steps",
        };
        write!(f, "{at}: {}", self.categories())
    }
}

impl Breakdown {
    /// `name 1.0 MiB (10%)`: a category's bytes and its share of the total.
    pub fn share(&self, name: &str, bytes: u64) -> String {
        let share = 100.0 * bytes as f64 / self.total().max(1) as f64;
        format!("{name} {} ({share:.0}%)", format_bytes(bytes))
    }

    /// The categories largest first, the empty ones left out, with what is estimated and what
    /// offload holds in host memory: the breakdown without where the peak fell (for a figure
    /// that is no peak, as the estimate at rest before training).
    pub fn categories(&self) -> String {
        let parts: Vec<String> = (self.ranked().into_iter())
            .filter(|(_, bytes)| *bytes > 0)
            .map(|(name, bytes)| self.share(name, bytes))
            .collect();
        let mut text = parts.join(", ");
        if !self.estimated.is_empty() {
            text += &format!(" (estimated: {})", self.estimated.join(", "));
        }
        if self.host > 0 {
            text += &format!("; offloaded to host memory: {}", format_bytes(self.host));
        }
        text
    }
}

fn is_zero(bytes: &u64) -> bool {
    *bytes == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn the_transient_is_split_into_gradients_and_activations_and_the_rest_into_other() {
        let footprint = Footprint {
            weights: 10 * MIB,
            compute_copy: 0,
            gradients: 20 * MIB,
            gradient_sets: 1,
            host_sum: false,
            host_optimizer: false,
            optimizer: 20 * MIB,
            data: Some(5 * MIB),
            average: 0,
            host_average: false,
        };
        let b = Breakdown::of(&footprint, 40 * MIB, 100 * MIB, PeakPhase::Backward);
        assert_eq!(
            (b.gradients, b.activations, b.other),
            (20 * MIB, 40 * MIB, 5 * MIB)
        );
        assert_eq!(b.total(), 100 * MIB);
        assert_eq!(b.ranked()[0], ("activations", 40 * MIB));
        assert_eq!(b.estimated, ["gradients", "activations"]);
        assert_eq!(
            b.to_string(),
            "in the backward pass: activations 40.0 MiB (40%), gradients 20.0 MiB (20%), optimizer 20.0 MiB (20%), \
             weights 10.0 MiB (10%), data 5.0 MiB (5%), other 5.0 MiB (5%) \
             (estimated: gradients, activations)"
        );
    }

    #[test]
    fn a_transient_smaller_than_a_gradient_set_is_all_gradients() {
        let footprint = Footprint {
            weights: 10 * MIB,
            compute_copy: 0,
            gradients: 10 * MIB,
            gradient_sets: 1,
            host_sum: false,
            host_optimizer: false,
            optimizer: 0,
            data: None,
            average: 0,
            host_average: false,
        };
        let b = Breakdown::of(&footprint, 12 * MIB, 16 * MIB, PeakPhase::Backward);
        assert_eq!((b.gradients, b.activations, b.other), (4 * MIB, 0, 2 * MIB));
        assert_eq!(b.total(), 16 * MIB);
        assert!(b.estimated.contains(&"data".to_string()));
        // Known categories over what was in use: other is 0 and the sum is over the peak.
        let b = Breakdown::of(&footprint, 8 * MIB, 8 * MIB, PeakPhase::Backward);
        assert_eq!((b.other, b.total()), (0, 10 * MIB));
    }

    #[test]
    fn a_compute_copy_is_part_of_the_transient_and_counted_with_the_weights() {
        let footprint = Footprint {
            weights: 8 * MIB,
            compute_copy: 4 * MIB,
            gradients: 8 * MIB,
            gradient_sets: 1,
            host_sum: false,
            host_optimizer: false,
            optimizer: 16 * MIB,
            data: Some(0),
            average: 0,
            host_average: false,
        };
        // At rest: weights and moments, 24 MiB; the step adds gradients, the copy and 10 MiB.
        let b = Breakdown::of(&footprint, 24 * MIB, 46 * MIB, PeakPhase::Backward);
        assert_eq!(
            (b.weights, b.gradients, b.activations),
            (12 * MIB, 8 * MIB, 10 * MIB)
        );
        assert_eq!((b.other, b.total()), (0, 46 * MIB));
    }

    #[test]
    fn a_peak_in_the_update_holds_one_gradient_set_and_the_updates_temporaries() {
        let footprint = Footprint {
            weights: 8 * MIB,
            compute_copy: 0,
            gradients: 16 * MIB,
            gradient_sets: 2,
            host_sum: false,
            host_optimizer: false,
            optimizer: 16 * MIB,
            data: Some(0),
            average: 0,
            host_average: false,
        };
        let peaks = StepPeaks {
            backward: 40 * MIB,
            update: 44 * MIB,
        };
        assert_eq!(peaks.phase_of(44 * MIB), PeakPhase::Update);
        assert_eq!(peaks.phase_of(40 * MIB), PeakPhase::Backward);
        assert_eq!(peaks.phase_of(45 * MIB), PeakPhase::Outside);
        let b = Breakdown::of(&footprint, 24 * MIB, 44 * MIB, PeakPhase::Update);
        assert_eq!(
            (b.gradients, b.optimizer, b.activations),
            (8 * MIB, 28 * MIB, 0)
        );
        assert_eq!(b.total(), 44 * MIB);
        assert!(b
            .to_string()
            .starts_with("in the optimizer's update: optimizer 28.0 MiB"));
        let b = Breakdown::of(&footprint, 24 * MIB, 30 * MIB, PeakPhase::Outside);
        assert_eq!((b.gradients, b.activations), (0, 6 * MIB));
    }
}
