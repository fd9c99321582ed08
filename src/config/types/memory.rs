//! `[memory]`.

use serde::{Deserialize, Serialize};

use super::{DeviceBudget, MemorySize};

/// `[memory]`: how the run allocates, what it may hold, and when it gives memory back.
///
/// The file's table reads into it as it is, a key of the table one field here and its default
/// in [`Default`]; `preallocate`, whose default depends on `policy`, is left `None` where the
/// file leaves it out and validation writes it in under `preallocate`. The checks of keys
/// together (a limit policy needs a limit, ...) are in `validate/memory.rs`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub struct MemoryConfig {
    /// The allocation policy (default `growth`).
    pub policy: MemoryPolicyKind,
    /// How much `policy = "preallocate"` reserves at run start (default there: 0.75 of the
    /// device's memory, JAX's share; unused under `growth`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preallocate: Option<MemorySize>,
    /// A hard cap on what the run may hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<MemorySize>,
    /// What happens when the limit is exceeded (default `fail`).
    pub on_limit: OnLimit,
    /// When memory is released and the release verified (default `between_runs`).
    pub clear: ClearPolicy,
    /// When snapshots are written (default `epoch`).
    pub snapshot: SnapshotEvery,
    /// The device's budget, shared by every tidemark run on it through the lease registry
    /// ([`crate::lease`]): bytes, a share of the device's memory, or `"device"` (what the
    /// device has free when its first run asks). Unset: the `TIDEMARK_DEVICE_BUDGET`
    /// variable's, else the registry's `budget` file's, else none (no lease is taken).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_budget: Option<DeviceBudget>,
    /// Whether a run whose lease the budget cannot hold now waits for one (default `true`);
    /// `false` exits 3 at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait: Option<bool>,
}

/// An allocation policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryPolicyKind {
    /// Allocate on demand; reserved memory grows with need.
    #[default]
    Growth,
    /// Reserve `preallocate` bytes at run start, so the run does not grow later.
    Preallocate,
}

/// What to do when the memory limit is exceeded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnLimit {
    /// Stop with a `LimitExceeded` error (exit code 3), keeping checkpoint and snapshots.
    #[default]
    Fail,
    /// Halve the micro-batch and double the accumulation steps, then retry the step.
    Shrink,
    /// Before the first step, probe the step at the configured micro-batch and at halves of
    /// it, and train at the largest that fits with a margin (the effective batch kept through
    /// accumulation); then enforce the limit as `Fail` does.
    Fit,
}

/// When memory is released back to the device or the OS.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClearPolicy {
    /// Never: pools keep their pages and the heap keeps freed memory.
    Never,
    /// After each run, release everything and verify it against the pre-run baseline.
    #[default]
    BetweenRuns,
    /// After every epoch too.
    EveryEpoch,
}

/// When memory snapshots are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SnapshotEvery {
    /// At run start, after every epoch and at run end.
    #[default]
    Epoch,
}
