//! Memory policies as pure decisions, after burn-train's checkpointing strategies: a policy
//! looks at the phase of the run and a [`MemoryUsage`] and returns [`MemoryAction`]s. It never
//! touches a device; the [`Executor`](super::Executor) and the training loop carry the actions
//! out. Every policy is therefore testable with plain numbers.

use std::fmt;

use super::usage::{format_bytes, MemorySource, MemoryUsage};
use crate::config::{ClearPolicy, MemoryConfig, MemoryPolicyKind, OnLimit};

/// Where in a run a decision is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Model and optimizer built, before the first step.
    RunStart,
    /// Inside or right after an optimizer step (after each backward pass, and after the update).
    Step,
    /// After an epoch's training and validation.
    EpochEnd,
    /// After a checkpoint is written. Writing one copies the whole optimizer state into host
    /// buffers at once (Burn's optimizer record), so on the host it can hold more than any
    /// step: measured on W1, 17.2 to 18.2 MiB above rest against a step's 12.8 MiB.
    Checkpoint,
    /// After the run's tensors are dropped.
    RunEnd,
}

/// The run's position and batch layout, as policies see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunState {
    /// Current epoch (1-based; 0 before training).
    pub epoch: usize,
    /// Optimizer step being taken (1-based within the run; 0 before training).
    pub step: usize,
    /// Samples per micro-batch now.
    pub micro_batch: usize,
    /// Micro-batches per optimizer step now.
    pub accumulation_steps: usize,
    /// Bytes the run needs at rest once training starts: parameters, gradients (twice with
    /// accumulation) and optimizer state, plus what was already held at run start.
    pub resting_estimate: u64,
    /// Within a step being retried after a shrink: the attempt before, as it breached.
    pub previous_attempt: Option<Attempt>,
}

/// One try at a step that breached the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    /// Accumulation steps of that try.
    pub accumulation_steps: usize,
    /// The figure that breached.
    pub observed: u64,
}

/// Something a policy wants done.
#[derive(Debug, Clone, PartialEq)]
pub enum MemoryAction {
    /// Make the device hold at least this many bytes reserved from now on.
    Reserve {
        /// Total reservation wanted.
        bytes: u64,
    },
    /// Release cached memory: pool pages on CubeCL, free heap pages to the OS on the host.
    Cleanup,
    /// Stop the run.
    Fail(LimitExceeded),
    /// Retry the step with smaller micro-batches and proportionally more of them.
    ShrinkBatch {
        /// New micro-batch size.
        micro_batch: usize,
        /// New accumulation steps.
        accumulation_steps: usize,
    },
}

/// The memory limit was exceeded (or would be, before training starts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitExceeded {
    /// The limit in bytes.
    pub limit: u64,
    /// The figure that exceeded it.
    pub observed: u64,
    /// Which figure that is.
    pub measure: &'static str,
    /// Epoch (0 before training).
    pub epoch: usize,
    /// Optimizer step (0 before training).
    pub step: usize,
    /// Micro-batch at the time.
    pub micro_batch: usize,
    /// Accumulation steps at the time.
    pub accumulation_steps: usize,
    /// With `on_limit = "shrink"`, when shrinking stopped early: what the last halving saved.
    pub futile_shrink: Option<u64>,
    /// When it was exceeded: before training, in a step, in validation or in a checkpoint.
    pub phase: Phase,
}

impl LimitExceeded {
    /// A concrete change that would likely fit.
    pub fn suggestion(&self) -> String {
        if let Some(saved) = self.futile_shrink {
            return format!(
                "the last halving of the micro-batch saved {}, and each further halving saves at \
                 most half as much, so no micro-batch fits: parameters, gradients and optimizer \
                 state dominate this peak; raise memory.limit or use a smaller model",
                format_bytes(saved)
            );
        }
        if self.phase == Phase::Checkpoint {
            return "writing a checkpoint copies the whole optimizer state into host memory at \
                    once, and the checkpoint is complete on disk; raise memory.limit, or use a \
                    smaller model or train.optimizer = \"sgd\" (no optimizer state)"
                .into();
        }
        if self.phase == Phase::EpochEnd {
            return "validation runs in micro-batches of the training step's size, without \
                    gradients; a smaller train.batch_size, with proportionally more \
                    train.accumulation_steps (or memory.on_limit = \"shrink\"), makes them \
                    smaller"
                .into();
        }
        if self.phase == Phase::RunStart {
            return "the model's parameters, gradients and optimizer state alone exceed it; \
                    raise memory.limit or use a smaller model"
                .into();
        }
        if self.micro_batch > 1 {
            format!(
                "try train.batch_size = {} with train.accumulation_steps = {} (same effective batch), \
                 or memory.on_limit = \"shrink\"",
                self.micro_batch.div_ceil(2),
                self.accumulation_steps * 2
            )
        } else {
            "the micro-batch is already 1; raise memory.limit or use a smaller model".into()
        }
    }
}

impl fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let when = match self.phase {
            Phase::RunStart => "before training".to_string(),
            Phase::Checkpoint => format!("while writing the checkpoint of epoch {}", self.epoch),
            Phase::EpochEnd => format!("in the validation of epoch {}", self.epoch),
            Phase::Step | Phase::RunEnd => format!(
                "at step {} of epoch {} (micro-batch {}, accumulation_steps {})",
                self.step, self.epoch, self.micro_batch, self.accumulation_steps
            ),
        };
        write!(
            f,
            "memory limit {} exceeded: {} {} {when}; {}",
            format_bytes(self.limit),
            format_bytes(self.observed),
            self.measure,
            self.suggestion()
        )
    }
}

impl std::error::Error for LimitExceeded {}

/// A memory policy: decides, never acts.
pub trait MemoryPolicy: fmt::Debug {
    /// The actions to take at `phase`, given `usage` now and the run's `state`.
    fn decide(&self, phase: Phase, usage: &MemoryUsage, state: &RunState) -> Vec<MemoryAction>;
}

/// Allocate on demand: no actions.
#[derive(Debug, Clone, Copy, Default)]
pub struct Growth;

impl MemoryPolicy for Growth {
    fn decide(&self, _: Phase, _: &MemoryUsage, _: &RunState) -> Vec<MemoryAction> {
        Vec::new()
    }
}

/// Reserve `bytes` at run start.
#[derive(Debug, Clone, Copy)]
pub struct Preallocate {
    /// Bytes to hold reserved.
    pub bytes: u64,
}

impl MemoryPolicy for Preallocate {
    fn decide(&self, phase: Phase, usage: &MemoryUsage, _: &RunState) -> Vec<MemoryAction> {
        if phase == Phase::RunStart && usage.bytes_reserved < self.bytes {
            vec![MemoryAction::Reserve { bytes: self.bytes }]
        } else {
            Vec::new()
        }
    }
}

/// A hard cap.
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    /// The cap in bytes.
    pub bytes: u64,
    /// What to do on a breach.
    pub on_limit: OnLimit,
}

/// The figure a limit applies to: on the host the exact high-water mark of accounted bytes; on
/// CubeCL pools what is taken from the device (reserved pages), which bounds the in-use peak.
pub fn held(usage: &MemoryUsage) -> (u64, &'static str) {
    match usage.source {
        MemorySource::Host => (usage.peak_bytes_in_use, "peak in use (host)"),
        MemorySource::CubeclPool => (
            usage.bytes_reserved.max(usage.peak_bytes_in_use),
            "reserved in the device pools",
        ),
    }
}

impl Limit {
    /// Whether halving the micro-batch again cannot bring `observed` under the limit, and if
    /// so what the last halving saved. Halving the micro-batch halves activation memory, so
    /// each halving saves at most half what the one before saved, and all further halvings
    /// together at most what the last one did. That holds once the previous attempt already
    /// accumulated (before that, the first halving also adds the accumulated-gradient buffer).
    fn futile_shrink(&self, observed: u64, state: &RunState) -> Option<u64> {
        if self.on_limit != OnLimit::Shrink {
            return None;
        }
        let previous = state.previous_attempt?;
        if previous.accumulation_steps < 2 {
            return None;
        }
        let saved = previous.observed.saturating_sub(observed);
        (observed.saturating_sub(saved) > self.bytes).then_some(saved)
    }
}

impl MemoryPolicy for Limit {
    fn decide(&self, phase: Phase, usage: &MemoryUsage, state: &RunState) -> Vec<MemoryAction> {
        let breach = |observed: u64, measure: &'static str| LimitExceeded {
            limit: self.bytes,
            observed,
            measure,
            epoch: state.epoch,
            step: state.step,
            micro_batch: state.micro_batch,
            accumulation_steps: state.accumulation_steps,
            futile_shrink: None,
            phase,
        };
        match phase {
            Phase::RunStart if state.resting_estimate > self.bytes => vec![MemoryAction::Fail(
                breach(state.resting_estimate, "needed at rest (estimated)"),
            )],
            // Outside steps: validation (in its own window) and checkpoints.
            // Neither can shrink: validation batches do not follow the micro-batch, and a
            // checkpoint's size is the model's.
            Phase::EpochEnd | Phase::Checkpoint => {
                let (observed, measure) = held(usage);
                match observed > self.bytes {
                    true => vec![MemoryAction::Fail(breach(observed, measure))],
                    false => Vec::new(),
                }
            }
            Phase::Step => {
                let (observed, measure) = held(usage);
                let futile = self.futile_shrink(observed, state);
                if observed <= self.bytes {
                    Vec::new()
                } else if let Some(saved) = futile {
                    vec![MemoryAction::Fail(LimitExceeded {
                        futile_shrink: Some(saved),
                        ..breach(observed, measure)
                    })]
                } else if self.on_limit == OnLimit::Shrink && state.micro_batch > 1 {
                    vec![MemoryAction::ShrinkBatch {
                        micro_batch: state.micro_batch.div_ceil(2),
                        accumulation_steps: state.accumulation_steps * 2,
                    }]
                } else {
                    vec![MemoryAction::Fail(breach(observed, measure))]
                }
            }
            _ => Vec::new(),
        }
    }
}

/// Releases memory at epoch or run end.
#[derive(Debug, Clone, Copy)]
pub struct Clear(pub ClearPolicy);

impl MemoryPolicy for Clear {
    fn decide(&self, phase: Phase, _: &MemoryUsage, _: &RunState) -> Vec<MemoryAction> {
        let clean = matches!(
            (self.0, phase),
            (ClearPolicy::EveryEpoch, Phase::EpochEnd)
                | (
                    ClearPolicy::EveryEpoch | ClearPolicy::BetweenRuns,
                    Phase::RunEnd
                )
        );
        if clean {
            vec![MemoryAction::Cleanup]
        } else {
            Vec::new()
        }
    }
}

/// The policies of one run, asked in order.
#[derive(Debug)]
pub struct Policies(Vec<Box<dyn MemoryPolicy>>);

impl Policies {
    /// The policies `config` asks for, with sizes resolved against `total` device bytes.
    pub fn from_config(config: &MemoryConfig, total: Option<u64>) -> Result<Self, String> {
        let resolve = |key: &str, size: crate::config::MemorySize| {
            size.resolve(total).ok_or_else(|| {
                format!(
                    "memory.{key} = {size} is a fraction, but this device does not report its \
                     total memory; give a size such as \"512MiB\""
                )
            })
        };
        let mut list: Vec<Box<dyn MemoryPolicy>> = Vec::new();
        match (config.policy, config.preallocate) {
            (MemoryPolicyKind::Preallocate, Some(size)) => list.push(Box::new(Preallocate {
                bytes: resolve("preallocate", size)?,
            })),
            _ => list.push(Box::new(Growth)),
        }
        if let Some(size) = config.limit {
            list.push(Box::new(Limit {
                bytes: resolve("limit", size)?,
                on_limit: config.on_limit,
            }));
        }
        list.push(Box::new(Clear(config.clear)));
        Ok(Self(list))
    }

    /// Every policy's actions at `phase`, in policy order.
    pub fn decide(&self, phase: Phase, usage: &MemoryUsage, state: &RunState) -> Vec<MemoryAction> {
        self.0
            .iter()
            .flat_map(|p| p.decide(phase, usage, state))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MemorySize;

    fn usage(source: MemorySource, in_use: u64, reserved: u64, peak: u64) -> MemoryUsage {
        MemoryUsage {
            bytes_in_use: in_use,
            bytes_reserved: reserved,
            peak_bytes_in_use: peak,
            bytes_padding: 0,
            source,
        }
    }

    const STATE: RunState = RunState {
        previous_attempt: None,
        epoch: 2,
        step: 7,
        micro_batch: 256,
        accumulation_steps: 1,
        resting_estimate: 100,
    };

    #[test]
    fn growth_never_acts() {
        for phase in [Phase::RunStart, Phase::Step, Phase::EpochEnd, Phase::RunEnd] {
            assert!(Growth
                .decide(phase, &usage(MemorySource::Host, 9, 9, 9), &STATE)
                .is_empty());
        }
    }

    #[test]
    fn preallocate_reserves_once_at_start_and_only_if_short() {
        let p = Preallocate { bytes: 1000 };
        let low = usage(MemorySource::CubeclPool, 0, 10, 0);
        assert_eq!(
            p.decide(Phase::RunStart, &low, &STATE),
            vec![MemoryAction::Reserve { bytes: 1000 }]
        );
        assert!(p.decide(Phase::Step, &low, &STATE).is_empty());
        assert!(p
            .decide(
                Phase::RunStart,
                &usage(MemorySource::CubeclPool, 0, 1000, 0),
                &STATE
            )
            .is_empty());
    }

    #[test]
    fn limit_uses_the_host_peak_and_the_pool_reservation() {
        let limit = Limit {
            bytes: 1000,
            on_limit: OnLimit::Fail,
        };
        // Host: the transient peak counts, even if in-use has fallen back.
        let host = usage(MemorySource::Host, 500, 5000, 1001);
        match limit.decide(Phase::Step, &host, &STATE).as_slice() {
            [MemoryAction::Fail(e)] => {
                assert_eq!(
                    (e.limit, e.observed, e.epoch, e.step, e.micro_batch),
                    (1000, 1001, 2, 7, 256)
                );
                assert_eq!(e.measure, "peak in use (host)");
            }
            other => panic!("{other:?}"),
        }
        assert!(limit
            .decide(
                Phase::Step,
                &usage(MemorySource::Host, 500, 5000, 1000),
                &STATE
            )
            .is_empty());
        // Pools: reserved pages are what the device gave up, even if in use is low.
        let pool = usage(MemorySource::CubeclPool, 10, 1200, 10);
        assert!(matches!(
            limit.decide(Phase::Step, &pool, &STATE).as_slice(),
            [MemoryAction::Fail(_)]
        ));
        // Not at run end: the run's tensors are gone by then.
        assert!(limit.decide(Phase::RunEnd, &host, &STATE).is_empty());
    }

    #[test]
    fn validation_and_checkpoints_are_held_to_the_limit_and_never_shrink() {
        let limit = Limit {
            bytes: 64 << 20,
            on_limit: OnLimit::Shrink,
        };
        let over = usage(MemorySource::Host, 49 << 20, 50 << 20, 67 << 20);
        let under = usage(MemorySource::Host, 49 << 20, 50 << 20, 63 << 20);
        for (phase, when, advice) in [
            (
                Phase::Checkpoint,
                "while writing the checkpoint of epoch 2",
                "writing a checkpoint copies the whole optimizer state into host memory at \
                 once, and the checkpoint is complete on disk",
            ),
            (
                Phase::EpochEnd,
                "in the validation of epoch 2",
                "validation runs in micro-batches of the training step's size, without gradients",
            ),
        ] {
            assert!(limit.decide(phase, &under, &STATE).is_empty(), "{phase:?}");
            match limit.decide(phase, &over, &STATE).as_slice() {
                [MemoryAction::Fail(e)] => {
                    assert_eq!(e.phase, phase);
                    let text = e.to_string();
                    assert!(
                        text.starts_with(&format!(
                            "memory limit 64.0 MiB exceeded: 67.0 MiB peak in use (host) {when}; \
                             {advice}"
                        )),
                        "{text}"
                    );
                }
                other => panic!("{phase:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn shrinking_stops_when_halving_cannot_reach_the_limit() {
        let limit = Limit {
            bytes: 1000,
            on_limit: OnLimit::Shrink,
        };
        let at = |micro_batch, accumulation_steps, prev_acc, prev_observed, observed| {
            let state = RunState {
                micro_batch,
                accumulation_steps,
                previous_attempt: Some(Attempt {
                    accumulation_steps: prev_acc,
                    observed: prev_observed,
                }),
                ..STATE
            };
            limit.decide(
                Phase::Step,
                &usage(MemorySource::Host, 0, 0, observed),
                &state,
            )
        };
        // The first halving adds the accumulation buffer: a rise proves nothing yet.
        assert!(matches!(
            at(128, 2, 1, 1100, 1150).as_slice(),
            [MemoryAction::ShrinkBatch { .. }]
        ));
        // 1150 -> 1120 saved 30; all further halvings save at most 30 more: 1090 > 1000.
        match at(64, 4, 2, 1150, 1120).as_slice() {
            [MemoryAction::Fail(e)] => {
                assert_eq!(e.futile_shrink, Some(30));
                assert!(
                    e.to_string()
                        .contains("the last halving of the micro-batch saved 30 B"),
                    "{e}"
                );
            }
            other => panic!("expected a failure, got {other:?}"),
        }
        // 1400 -> 1100 saved 300: halving again may still fit.
        assert!(matches!(
            at(64, 4, 2, 1400, 1100).as_slice(),
            [MemoryAction::ShrinkBatch { .. }]
        ));
    }

    #[test]
    fn shrink_halves_the_micro_batch_until_one() {
        let limit = Limit {
            bytes: 1000,
            on_limit: OnLimit::Shrink,
        };
        let over = usage(MemorySource::Host, 0, 0, 2000);
        assert_eq!(
            limit.decide(Phase::Step, &over, &STATE),
            vec![MemoryAction::ShrinkBatch {
                micro_batch: 128,
                accumulation_steps: 2
            }]
        );
        let odd = RunState {
            micro_batch: 5,
            accumulation_steps: 3,
            ..STATE
        };
        assert_eq!(
            limit.decide(Phase::Step, &over, &odd),
            vec![MemoryAction::ShrinkBatch {
                micro_batch: 3,
                accumulation_steps: 6
            }]
        );
        let one = RunState {
            micro_batch: 1,
            ..STATE
        };
        assert!(matches!(
            limit.decide(Phase::Step, &over, &one).as_slice(),
            [MemoryAction::Fail(_)]
        ));
    }

    #[test]
    fn limit_checks_the_resting_estimate_before_training() {
        let limit = Limit {
            bytes: 1000,
            on_limit: OnLimit::Shrink,
        };
        let start = RunState {
            epoch: 0,
            step: 0,
            resting_estimate: 1500,
            ..STATE
        };
        match limit
            .decide(Phase::RunStart, &usage(MemorySource::Host, 0, 0, 0), &start)
            .as_slice()
        {
            [MemoryAction::Fail(e)] => {
                assert_eq!(e.observed, 1500);
                let text = e.to_string();
                assert!(text.starts_with("memory limit 1000 B exceeded: 1.5 KiB needed at rest (estimated) before training"), "{text}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn limit_message_names_values_and_suggests_a_fix() {
        let e = LimitExceeded {
            limit: 512 << 20,
            observed: 731 << 20,
            measure: "peak in use (host)",
            epoch: 1,
            step: 3,
            micro_batch: 256,
            accumulation_steps: 1,
            futile_shrink: None,
            phase: Phase::Step,
        };
        assert_eq!(
            e.to_string(),
            "memory limit 512.0 MiB exceeded: 731.0 MiB peak in use (host) at step 3 of epoch 1 \
             (micro-batch 256, accumulation_steps 1); try train.batch_size = 128 with \
             train.accumulation_steps = 2 (same effective batch), or memory.on_limit = \"shrink\""
        );
    }

    #[test]
    fn clear_policies_clean_at_the_right_phases() {
        let u = usage(MemorySource::Host, 0, 0, 0);
        let at = |c: ClearPolicy, p: Phase| {
            Clear(c).decide(p, &u, &STATE) == vec![MemoryAction::Cleanup]
        };
        assert!(!at(ClearPolicy::Never, Phase::RunEnd));
        assert!(
            at(ClearPolicy::BetweenRuns, Phase::RunEnd)
                && !at(ClearPolicy::BetweenRuns, Phase::EpochEnd)
        );
        assert!(
            at(ClearPolicy::EveryEpoch, Phase::EpochEnd)
                && at(ClearPolicy::EveryEpoch, Phase::RunEnd)
        );
        assert!(!at(ClearPolicy::EveryEpoch, Phase::Step));
    }

    #[test]
    fn policies_from_config_resolve_fractions_or_explain() {
        let mut config = MemoryConfig {
            policy: MemoryPolicyKind::Preallocate,
            preallocate: Some(MemorySize::Fraction(0.5)),
            limit: Some(MemorySize::Bytes(800)),
            on_limit: OnLimit::Fail,
            clear: ClearPolicy::BetweenRuns,
            snapshot: crate::config::SnapshotEvery::Epoch,
        };
        let policies = Policies::from_config(&config, Some(1000)).unwrap();
        let start = RunState {
            step: 0,
            resting_estimate: 0,
            ..STATE
        };
        assert_eq!(
            policies.decide(
                Phase::RunStart,
                &usage(MemorySource::CubeclPool, 0, 0, 0),
                &start
            ),
            vec![MemoryAction::Reserve { bytes: 500 }]
        );
        let err = Policies::from_config(&config, None).unwrap_err();
        assert!(
            err.starts_with("memory.preallocate = 0.5 is a fraction"),
            "{err}"
        );
        config.policy = MemoryPolicyKind::Growth;
        config.preallocate = None;
        let policies = Policies::from_config(&config, None).unwrap();
        assert_eq!(
            policies.decide(Phase::RunEnd, &usage(MemorySource::Host, 0, 0, 0), &STATE),
            vec![MemoryAction::Cleanup]
        );
    }
}
