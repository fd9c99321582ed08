//! The advisor: which change would lower a run's training peak, and by how much.
//!
//! Each lever that changes the step's transient (accumulation, a smaller micro-batch, gradient
//! checkpointing, bf16) is estimated from one probed step under it, against a probe of the
//! step as it runs: the difference is what the backward passes' peak would lose. The rest of
//! the run's phases keep their peaks (the update holds one gradient set either way), so the
//! new training peak is the highest of the phases after the change. Dropping the optimizer's
//! state (SGD without momentum) lowers every figure taken while the state is held (from the
//! first update on) by the state's bytes, counted from the parameters. On a device with memory
//! of its own, offload is a lever too: the gradient sum in host memory takes one gradient set
//! off the backward passes, the optimizer's state in host memory takes the state off every
//! figure, each for the bytes it moves per step.
//!
//! [`Advice`] is plain numbers, so that a run can hold it through its release without holding
//! heap; [`AdviceRecord`] is its form in `summary.json`, `tidemark report` and a limit error.

mod record;

pub use record::{AdviceRecord, LeverRecord};

use super::breakdown::StepPeaks;

/// A change to try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lever {
    /// Micro-batches `k` times smaller with `k` times the accumulation: the same update.
    Accumulation {
        /// How many times smaller.
        k: usize,
        /// The micro-batch with it.
        micro_batch: usize,
        /// The accumulation steps with it.
        steps: usize,
    },
    /// Half the micro-batch and the same accumulation: the effective batch halves.
    SmallerMicroBatch {
        /// The micro-batch with it.
        micro_batch: usize,
    },
    /// Burn's gradient checkpointing (recomputes memory-bound operations' outputs).
    Checkpointing,
    /// bf16 compute over the f32 weights, which costs a bf16 copy of them in each step.
    Bf16,
    /// The step's gradient sum in host memory (`train.offload.gradients = "host"`): one
    /// gradient set fewer on the device while a step accumulates.
    OffloadGradients {
        /// Bytes moved between the device and the host per optimizer step.
        moved: u64,
    },
    /// The optimizer's state and update in host memory (`train.offload.optimizer = "host"`).
    OffloadOptimizer {
        /// Bytes moved between the device and the host per optimizer step.
        moved: u64,
    },
    /// `[train.ema]`'s average in host memory (`train.ema.device = "host"`): off the device
    /// but while validation uses it.
    EmaOnHost {
        /// Bytes moved between the device and the host per optimizer step.
        moved: u64,
    },
    /// SGD without momentum in place of an optimizer with state.
    Sgd {
        /// The run already uses SGD, with momentum: the lever turns momentum off (and
        /// Nesterov's, which needs it) rather than switching optimizers.
        momentum: bool,
    },
}

/// How a lever changes the run's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// The backward passes' transient, probed as the step runs (`base`) and under the lever.
    Transient {
        /// The step as it runs.
        base: u64,
        /// The step under the lever.
        with: u64,
    },
    /// The optimizer's state, held from the first update on, which the lever removes.
    State(u64),
}

/// One lever's estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimate {
    /// The change.
    pub lever: Lever,
    /// Bytes off the training peak (negative: the lever raises it).
    pub saves: i64,
    /// What the lever adds while it saves: a second gradient set, the weight copy (0: none).
    pub adds: u64,
}

/// The most levers one advice holds.
const LEVERS: usize = 10;

/// The training peak's phases the estimates start from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Peaks {
    /// The highest figure of the backward passes before the first update, when the optimizer
    /// has no state yet.
    pub first_step: u64,
    /// The highest figure of the later steps' backward passes and of their updates.
    pub steps: StepPeaks,
    /// The training peak: the highest epoch's, validation included.
    pub training: u64,
}

impl Peaks {
    /// The peak after a change that lowers the backward passes' figure by `backward` and every
    /// figure taken while the optimizer's state is held by `state`.
    fn after(&self, backward: i64, state: u64) -> i64 {
        let steps = self
            .first_step
            .max(self.steps.backward)
            .max(self.steps.update);
        // A training peak above the steps' fell outside them (validation) and stays.
        let outside = if self.training > steps {
            self.training as i64 - state as i64
        } else {
            0
        };
        let first = self.first_step as i64 - backward;
        let later = self.steps.backward as i64 - backward - state as i64;
        let update = self.steps.update as i64 - state as i64;
        first.max(later).max(update).max(outside)
    }
}

/// The levers estimated for one run, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Advice {
    peaks: Peaks,
    levers: [Option<Estimate>; LEVERS],
}

impl Advice {
    /// No levers yet, for a run whose phases peaked at `peaks`.
    pub fn new(peaks: Peaks) -> Self {
        Self {
            peaks,
            levers: [None; LEVERS],
        }
    }

    /// The training peak the savings are taken from: the highest of its phases.
    pub fn peak(&self) -> u64 {
        let p = &self.peaks;
        p.training
            .max(p.first_step)
            .max(p.steps.backward)
            .max(p.steps.update)
    }

    /// Adds `lever`, which has `effect` and adds `adds` bytes while it saves.
    pub fn add(&mut self, lever: Lever, effect: Effect, adds: u64) {
        let after = match effect {
            Effect::Transient { base, with } => self.peaks.after(base as i64 - with as i64, 0),
            Effect::State(bytes) => self.peaks.after(0, bytes),
        };
        let estimate = Estimate {
            lever,
            saves: self.peak() as i64 - after,
            adds,
        };
        if let Some(free) = self.levers.iter_mut().find(|l| l.is_none()) {
            *free = Some(estimate);
        }
        self.levers
            .sort_by_key(|l| (l.is_none(), l.map(|e| std::cmp::Reverse(e.saves))));
    }

    /// The estimates, the largest saving first.
    pub fn estimates(&self) -> impl Iterator<Item = &Estimate> {
        self.levers.iter().flatten()
    }

    /// Its form for `summary.json`, a report and an error.
    pub fn record(&self) -> AdviceRecord {
        AdviceRecord {
            peak: self.peak(),
            levers: self.estimates().map(LeverRecord::from).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn peaks(backward: u64, update: u64, training: u64) -> Peaks {
        Peaks {
            first_step: 0,
            steps: StepPeaks {
                backward: backward * MIB,
                update: update * MIB,
            },
            training: training * MIB,
        }
    }

    #[test]
    fn a_lever_saves_what_the_backward_passes_lose_down_to_the_next_phase() {
        let mut advice = Advice::new(peaks(100, 60, 100));
        let half = Lever::SmallerMicroBatch { micro_batch: 8 };
        // The probe's transient falls by 30 MiB: the peak with it.
        advice.add(
            half,
            Effect::Transient {
                base: 50 * MIB,
                with: 20 * MIB,
            },
            0,
        );
        // It falls by 70 MiB, but the update still peaks at 60: 40 saved.
        advice.add(
            Lever::Checkpointing,
            Effect::Transient {
                base: 80 * MIB,
                with: 10 * MIB,
            },
            0,
        );
        // A second gradient set outweighs what it saves.
        let acc = Lever::Accumulation {
            k: 2,
            micro_batch: 8,
            steps: 2,
        };
        advice.add(
            acc,
            Effect::Transient {
                base: 50 * MIB,
                with: 55 * MIB,
            },
            10 * MIB,
        );
        advice.add(
            Lever::Sgd { momentum: false },
            Effect::State(8 * MIB),
            8 * MIB,
        );
        let saves: Vec<i64> = advice.estimates().map(|e| e.saves / MIB as i64).collect();
        assert_eq!(saves, [40, 30, 8, -5]);
        let record = advice.record();
        assert_eq!(record.levers[0].lever, "gradient checkpointing");
        assert_eq!(
            record.helping(Some(65 * MIB)),
            ["gradient checkpointing saves 40.0 MiB (--set train.gradient_checkpointing=true)"]
        );
        assert_eq!(
            record.not_helping(),
            ["accumulation x2 adds 5.0 MiB (the same update; holds a second gradient set (10.0 MiB))"]
        );
        assert!(record
            .table()
            .contains("--set train.batch_size=8; the effective batch halves"));
    }

    #[test]
    fn a_peak_in_validation_bounds_what_a_step_lever_saves_but_not_the_optimizers_state() {
        // Validation peaked at 90 MiB, the steps at 80 and 50.
        let mut advice = Advice::new(peaks(80, 50, 90));
        advice.add(
            Lever::Checkpointing,
            Effect::Transient {
                base: 40 * MIB,
                with: 10 * MIB,
            },
            0,
        );
        advice.add(
            Lever::Sgd { momentum: false },
            Effect::State(6 * MIB),
            6 * MIB,
        );
        let saves: Vec<i64> = advice.estimates().map(|e| e.saves / MIB as i64).collect();
        assert_eq!(saves, [6, 0]);
        assert_eq!(advice.peak(), 90 * MIB);
    }

    #[test]
    fn a_peak_in_the_first_step_is_not_lowered_by_dropping_the_optimizers_state() {
        // The first step peaked at 100 MiB before the optimizer had state; later ones at 97.
        let mut advice = Advice::new(Peaks {
            first_step: 100 * MIB,
            ..peaks(97, 60, 100)
        });
        advice.add(
            Lever::Sgd { momentum: false },
            Effect::State(10 * MIB),
            10 * MIB,
        );
        let half = Lever::SmallerMicroBatch { micro_batch: 8 };
        advice.add(
            half,
            Effect::Transient {
                base: 50 * MIB,
                with: 30 * MIB,
            },
            0,
        );
        let saves: Vec<i64> = advice.estimates().map(|e| e.saves / MIB as i64).collect();
        assert_eq!(saves, [20, 0]);
    }
}
