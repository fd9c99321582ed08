//! What `sweep.svg` draws of a search's ranked trials.

use super::rank::{TrialRow, TrialStatus};
use crate::report::{SearchPicture, SearchPoint};
use crate::sweep::plan::SearchPlan;
use crate::sweep::space::literal;

/// What `sweep.svg` draws of the trials.
pub(in crate::sweep) fn picture(
    plan: &SearchPlan,
    rows: &[TrialRow],
    budget: Option<u64>,
) -> SearchPicture {
    let keys: Vec<String> = rows
        .first()
        .map(|r| r.values.keys().cloned().collect())
        .unwrap_or_default();
    let mut trials: Vec<SearchPoint> = rows
        .iter()
        .map(|r| SearchPoint {
            trial: r.trial,
            values: keys
                .iter()
                .map(|k| r.values.get(k).map(literal).unwrap_or_default())
                .collect(),
            monitored: r.monitored,
            pruned: r.status == TrialStatus::Pruned,
            peak: r.memory.as_ref().map(|m| m.peak_bytes_in_use),
            lease: r.lease_bytes,
            runs: match r.runs.is_empty() {
                true => r.started_s.zip(r.ended_s).into_iter().collect(),
                false => r.runs.iter().map(|&[from, to]| (from, to)).collect(),
            },
        })
        .collect();
    trials.sort_by_key(|t| t.trial);
    SearchPicture {
        monitor: plan.monitor.clone(),
        keys,
        trials,
        budget,
    }
}
