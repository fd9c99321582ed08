//! Where a trial stands by its own files (its summary and snapshots), which a resumed search
//! trusts over its pruning record.

use std::path::Path;

use super::record::{read_curve, Curve, Standing};
use crate::error::Error;
use crate::record::{RunStatus, RunSummary};

/// Where the run in `run_dir` stands by its own files: its summary's standing where the
/// summary is of the epochs its snapshots hold (completed, paused or pruned), else running if
/// it trained anything (resumed from its checkpoint); `None` if it never started.
pub(super) fn from_files(run_dir: &Path, monitor: &str) -> Result<Option<Curve>, Error> {
    let values = read_curve(run_dir, monitor)?;
    let summary = RunSummary::read(run_dir)?.filter(|s| s.epochs == values.len());
    let (standing, reason) = match summary.map(|s| (s.status, s.stopped_by)) {
        Some((RunStatus::Completed, _)) => (Standing::Completed, None),
        Some((RunStatus::Paused, _)) => (Standing::Paused, None),
        Some((RunStatus::Pruned, why)) => (Standing::Pruned, why),
        _ if !values.is_empty() => (Standing::Running, None),
        _ => return Ok(None),
    };
    Ok(Some(Curve {
        values,
        standing,
        reason,
    }))
}

/// Whether the run in `run_dir` stopped after `epoch` epochs with its summary written there
/// (paused, pruned or completed).
pub(super) fn stopped_at(run_dir: &Path, epoch: usize) -> Result<bool, Error> {
    Ok(RunSummary::read(run_dir)?.is_some_and(|s| {
        s.epochs == epoch
            && matches!(
                s.status,
                RunStatus::Paused | RunStatus::Pruned | RunStatus::Completed
            )
    }))
}

/// A standing, as the user reads it.
pub(super) fn describe(standing: Standing) -> &'static str {
    match standing {
        Standing::Running => "stopped mid-way",
        Standing::Paused => "paused at its rung",
        Standing::Completed => "completed",
        Standing::Pruned => "pruned",
        Standing::Failed => "failed",
    }
}
