//! Memory policies as pure decisions, after burn-train's checkpointing strategies: a policy
//! looks at the phase of the run and a [`MemoryUsage`] and returns [`MemoryAction`]s. It never
//! touches a device; the [`Executor`](super::Executor) and the training loop carry the actions
//! out. Every policy is therefore testable with plain numbers.

use std::fmt;

mod limit;
mod need;
mod offload;

pub use limit::{held, Limit, LimitExceeded, OffloadHint};
pub use need::{fit_target, lease_for, limit_for, Measured, StepFigures, FIT_MARGIN, LEASE_MARGIN};
pub use offload::{offload_hints, OffloadDecision, OffloadView};

use super::layout::Layout;
use super::usage::MemoryUsage;
use crate::config::{ClearPolicy, MemoryConfig, MemoryPolicyKind};

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
    /// How the step's samples are cut now.
    pub layout: Layout,
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
        /// The layout to retry at.
        layout: Layout,
    },
}

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
    pub fn from_config(
        config: &MemoryConfig,
        total: Option<u64>,
    ) -> Result<Self, crate::config::ValueError> {
        let resolve = |key: &str, size: crate::config::MemorySize| {
            size.resolve(total).ok_or_else(|| {
                crate::config::ValueError(format!(
                    "memory.{key} = {size} is a fraction, but this device does not report its \
                     total memory; give a size such as \"512MiB\""
                ))
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

    /// A limit of `bytes` where the config sets none (a run's memory lease, taken once the
    /// run is set up), checked as `memory.limit` is, before the clear.
    pub fn add_limit(&mut self, bytes: u64, on_limit: crate::config::OnLimit) {
        let at = self.0.len().saturating_sub(1);
        self.0.insert(at, Box::new(Limit { bytes, on_limit }));
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
mod tests;
