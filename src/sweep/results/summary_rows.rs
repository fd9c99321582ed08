//! A search's rows: each trial's figures read back from its `summary.json` (whichever process
//! or worker trained it), with how it ended, its lease and when it ran.

use std::path::Path;

use super::rank::{TrialRow, TrialStatus};
use super::SweepRow;
use crate::error::Error;
use crate::record::{RunStatus, RunSummary};
use crate::sweep::parallel::timeline::Timeline;
use crate::sweep::plan::SearchPlan;
use crate::sweep::space::Trial;
use crate::sweep::trial_run::TrialErrors;

/// The rows of the plan's trials, from their `summary.json`, with the
/// `errors` of those that failed. A trial that fails still writes its summary, with its memory
/// figures, when it got as far as its run directory.
///
/// Every summary is read before anything is written: one that cannot be read stops the
/// ranking (a report, say), which would otherwise rank that trial as not run and rewrite the
/// results; a trial that failed keeps its own error whatever its file holds. Each row gets its
/// lease and times where the trials ran in parallel.
pub(in crate::sweep) fn read_rows(
    dir: &Path,
    plan: &SearchPlan,
    mut errors: TrialErrors,
) -> Result<Vec<TrialRow>, Error> {
    let mut rows = Vec::new();
    for t in &plan.trials {
        let error = errors.remove(&t.number);
        let summary = match (RunSummary::read(&dir.join(t.name())), &error) {
            (Ok(summary), _) => summary,
            (Err(_), Some(_)) => None,
            (Err(e), None) => return Err(e.into()),
        };
        rows.push(row(t, summary, error, &plan.monitor));
    }
    attach(&mut rows, &Timeline::merged(dir)?);
    Ok(rows)
}

/// A trial's row: its summary's figures, or what stopped it (`error`, or the summary's).
fn row(
    trial: &Trial,
    summary: Option<RunSummary>,
    error: Option<String>,
    monitor: &str,
) -> TrialRow {
    let (status, reason) = match (summary.as_ref().map(|s| &s.status), error) {
        (Some(RunStatus::Completed), _) => (TrialStatus::Completed, None),
        (_, Some(e)) => (TrialStatus::Failed, Some(e)),
        (Some(RunStatus::Failed(e)), None) => (TrialStatus::Failed, Some(e.clone())),
        (Some(RunStatus::Pruned), None) => (TrialStatus::Pruned, summary_reason(&summary)),
        (Some(RunStatus::Paused), None) => (TrialStatus::Paused, None),
        (None, None) => (TrialStatus::NotRun, None),
    };
    TrialRow {
        rank: None,
        trial: trial.number,
        name: trial.name(),
        values: trial.values.clone(),
        status,
        reason,
        monitored: summary
            .as_ref()
            .filter(|_| matches!(status, TrialStatus::Completed | TrialStatus::Pruned))
            .and_then(|s| s.monitored(monitor)),
        epochs: summary.as_ref().map(|s| s.epochs),
        lease_bytes: None,
        started_s: None,
        ended_s: None,
        runs: Vec::new(),
        memory: summary.map(|s| SweepRow::of(trial.number, s)),
        lineage: Vec::new(),
    }
}

/// Each row's lease and times from `schedule`, where it ran in a child process.
pub(in crate::sweep) fn attach(rows: &mut [TrialRow], schedule: &Timeline) {
    let Some(origin) = schedule.origin() else {
        return;
    };
    for row in rows {
        if let Some(slot) = schedule.slots.get(&row.trial) {
            row.lease_bytes = Some(slot.lease_bytes);
            row.started_s = Some(slot.started_unix - origin);
            row.ended_s = slot.ended_unix.map(|t| t - origin);
            let latest = slot.ended_unix.map(|end| [slot.started_unix, end]);
            row.runs = (slot.earlier.iter().copied().chain(latest))
                .map(|[from, to]| [from - origin, to - origin])
                .collect();
            if let Some(first) = row.runs.first() {
                row.started_s = Some(first[0]);
            }
        }
    }
}

/// Why the pruner stopped the run.
fn summary_reason(summary: &Option<RunSummary>) -> Option<String> {
    summary.as_ref().and_then(|s| s.stopped_by.clone())
}
