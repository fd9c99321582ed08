//! What `sweep.svg` draws of a search's ranked trials.

use super::rank::{TrialRow, TrialStatus};
use crate::report::{MemberLine, SearchPicture, SearchPoint};
use crate::sweep::plan::SearchPlan;
use crate::sweep::space::{literal, number};

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
    let mut population: Vec<MemberLine> = (rows.iter())
        .filter(|r| !r.lineage.is_empty())
        .map(|r| member(r, &keys))
        .collect();
    population.sort_by_key(|m| m.trial);
    SearchPicture {
        monitor: plan.monitor.clone(),
        keys,
        trials,
        budget,
        population,
    }
}

/// Member `row` of a population over its epochs: its value at each interval and at its end,
/// its copies, and each of `keys`' values from the epoch it applies after.
fn member(row: &TrialRow, keys: &[String]) -> MemberLine {
    let mut values: Vec<(usize, f64)> = (row.lineage.iter())
        .filter_map(|i| Some((i.epoch, i.value?)))
        .collect();
    if let (Some(epochs), Some(value)) = (row.epochs, row.monitored) {
        values.push((epochs, value));
    }
    let number = |v: Option<&toml::Value>| v.and_then(number);
    let settings = (keys.iter())
        .map(|key| {
            // What it was drawn with: what it trained its first interval with.
            let drawn = row.lineage.first().map_or(&row.values, |i| &i.values);
            let first = number(drawn.get(key)).into_iter().map(|v| (0, v));
            let copied = (row.lineage.iter())
                .filter_map(|i| Some((i.epoch, number(i.copied.as_ref()?.values.get(key))?)));
            first.chain(copied).collect()
        })
        .collect();
    MemberLine {
        trial: row.trial,
        values,
        copied: (row.lineage.iter())
            .filter_map(|i| Some((i.epoch, i.copied.as_ref()?.from)))
            .collect(),
        settings,
    }
}
