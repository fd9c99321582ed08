//! `[memory]`.

use serde::Serialize;

use super::MemorySize;

/// `[memory]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryConfig {
    /// The allocation policy.
    pub policy: MemoryPolicyKind,
    /// How much `policy = "preallocate"` reserves at run start (unused under `growth`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preallocate: Option<MemorySize>,
    /// A hard cap on what the run may hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<MemorySize>,
    /// What happens when the limit is exceeded.
    pub on_limit: OnLimit,
    /// When memory is released and the release verified.
    pub clear: ClearPolicy,
    /// When snapshots are written.
    pub snapshot: SnapshotEvery,
}

/// An allocation policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryPolicyKind {
    /// Allocate on demand; reserved memory grows with need.
    Growth,
    /// Reserve `preallocate` bytes at run start, so the run does not grow later.
    Preallocate,
}

/// What to do when the memory limit is exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnLimit {
    /// Stop with a `LimitExceeded` error (exit code 3), keeping checkpoint and snapshots.
    Fail,
    /// Halve the micro-batch and double the accumulation steps, then retry the step.
    Shrink,
    /// Before the first step, probe the step at the configured micro-batch and at halves of
    /// it, and train at the largest that fits with a margin (the effective batch kept through
    /// accumulation); then enforce the limit as `Fail` does.
    Fit,
}

/// When memory is released back to the device or the OS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClearPolicy {
    /// Never: pools keep their pages and the heap keeps freed memory.
    Never,
    /// After each run, release everything and verify it against the pre-run baseline.
    BetweenRuns,
    /// After every epoch too.
    EveryEpoch,
}

/// When memory snapshots are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SnapshotEvery {
    /// At run start, after every epoch and at run end.
    Epoch,
}
