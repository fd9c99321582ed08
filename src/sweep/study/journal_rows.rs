//! A study's rows, from the journal alone: every trial with its values, state, value and what
//! it took (the user attributes its worker wrote as it ended), so that `tidemark report` ranks
//! a study from any machine that can read its storage; and, in a sweep directory, the leases
//! and times of the trials its workers packed there ([`attach`]).

use std::collections::BTreeMap;

use serde_json::Value;

use super::joined::Study;
use super::population::{check_exploits, exploits};
use crate::config::MonitorMode;
use crate::error::{Error, SweepError};
use crate::record::MAX_EPOCHS;
use crate::sweep::journal::attrs::{EPOCHS, MEMORY, PACKED, PLAN, REASON, SLOT, WORKER};
use crate::sweep::journal::op::State;
use crate::sweep::journal::replay::{Journal, TrialRecord};
use crate::sweep::parallel::timeline::{Slot, Timeline};
use crate::sweep::results::{last_values, Copied, Interval, TrialRow, TrialStatus};
use crate::sweep::space::{Trial, MAX_TRIALS};

/// What a study is ranked by: its monitor and mode, from the plan its first worker wrote.
pub fn monitor_of(journal: &Journal, study: usize) -> Option<(String, MonitorMode)> {
    let plan = journal.studies[study].system_attrs.get(PLAN)?;
    let monitor = plan["monitor"].as_str()?.to_string();
    let mode = serde_json::from_value(plan["mode"].clone()).ok()?;
    Some((monitor, mode))
}

/// The trials tidemark planned for `study`: its plan's count.
pub fn planned(journal: &Journal, study: usize) -> usize {
    let plan = journal.studies[study].system_attrs.get(PLAN);
    match plan.map(|p| &p["trials"]) {
        Some(Value::Array(trials)) => trials.len(),
        Some(n) => n.as_u64().unwrap_or(0) as usize,
        None => 0,
    }
}

/// One row per planned trial, unranked: those not created yet are "not run". From a journal
/// read whole (a lean one has let its finished trials go), at `spec`; one whose records a row
/// cannot be made from (a population's exploit that its decisions could not have made) is the
/// error naming the journal and the record ([`check_exploits`]).
pub fn rows(journal: &Journal, study: usize, spec: &str) -> Result<Vec<TrialRow>, Error> {
    debug_assert!(
        journal.whole(),
        "a study's rows come from its whole journal"
    );
    check_exploits(journal, study, spec)?;
    // A row for each trial planned, a lineage interval for each of a member's intervals and a
    // schedule line for each epoch: counts no search plans and no run trains are the journal's
    // error, not tables to allocate.
    for &id in &journal.studies[study].trials {
        let t = &journal.trials[&id];
        let said = (t.user_attrs.get(EPOCHS).and_then(Value::as_u64)).unwrap_or(0);
        let epochs = (t.epochs() as u64).max(said);
        if epochs > MAX_EPOCHS as u64 {
            let trial = t
                .number
                .map_or_else(|| format!("trial id {id}"), Trial::name_of);
            return Err(Error::Sweep(SweepError::Plan {
                origin: spec.to_string(),
                message: format!(
                    "{trial}: epoch {epochs} recorded, past the {MAX_EPOCHS} a study's rows are \
                     drawn for"
                ),
            }));
        }
    }
    let planned = planned(journal, study);
    if planned > MAX_TRIALS {
        return Err(Error::Sweep(SweepError::Plan {
            origin: spec.to_string(),
            message: format!(
                "{PLAN}: trials is {planned}, more than the {MAX_TRIALS} a search plans"
            ),
        }));
    }
    let interval = interval_of(journal, study);
    let mut by_number: BTreeMap<usize, TrialRow> = (journal.studies[study].trials.iter())
        .map(|&id| &journal.trials[&id])
        .filter_map(|t| Some((t.number?, row(t, interval))))
        .collect();
    for n in 1..=planned {
        by_number.entry(n).or_insert_with(|| TrialRow::not_run(n));
    }
    Ok(by_number.into_values().collect())
}

/// The worker of each running trial of `study`, sorted (a worker once per trial it runs).
pub fn running_on(journal: &Journal, study: usize) -> Vec<&str> {
    let mut workers: Vec<&str> = (journal.studies[study].trials.iter())
        .map(|&id| &journal.trials[&id])
        .filter(|t| t.state == State::Running)
        .filter_map(|t| t.system_attrs.get(WORKER)?.as_str())
        .collect();
    workers.sort_unstable();
    workers
}

/// Where the study stands, as a worker's terminal shows it after each of its trials.
///
/// From the journal's counts of the study's finished trials, and its unfinished ones: not its
/// rows, whose values are parsed from the journal's distributions, nor its finished trials,
/// which a worker's lean journal no longer holds. Built after every trial, rows made a study
/// of 1,000 tiny trials 1.5 times slower a trial in its last tenth than in its first
/// (docs/cluster.md).
pub fn progress(journal: &Journal, study: &Study, me: &str) -> String {
    let record = &journal.studies[study.id];
    let trials = planned(journal, study.id).max(record.numbered);
    let paused = (record.trials.iter())
        .map(|id| &journal.trials[id])
        .filter(|t| t.number.is_some() && t.state == State::Waiting)
        .count();
    let ended = record.ended;
    let (completed, pruned, failed) = (ended.completed, ended.pruned, ended.failed);
    let running = running_on(journal, study.id);
    let others = running.iter().filter(|w| **w != me);
    let (running, mut workers): (usize, Vec<&str>) =
        (others.clone().count(), others.copied().collect());
    workers.dedup();
    // Other workers are named only where there are some (a search alone has none).
    let others = match workers.len() {
        0 => String::new(),
        1 => format!("{running} running on 1 other worker, "),
        n => format!("{running} running on {n} other workers, "),
    };
    let at = match study.population {
        Some(_) => "an interval",
        None => "a rung",
    };
    format!(
        "study {}: {} of {} trials done ({completed} completed, {pruned} pruned, {failed} \
         failed); {others}{} paused at {at}",
        study.name,
        completed + pruned + failed,
        trials,
        paused,
    )
}

/// A population's interval, in epochs, from the plan its first worker wrote (`None` for a
/// search that is not population based training).
fn interval_of(journal: &Journal, study: usize) -> Option<usize> {
    let plan = journal.studies[study].system_attrs.get(PLAN)?;
    plan["pbt"]["interval"].as_u64().map(|i| i as usize)
}

/// Member `t`'s lineage, its `values` its own: at every interval it trained past, the settings
/// it trained the interval with, its value there, and its exploit there.
fn lineage(
    t: &TrialRecord,
    interval: usize,
    values: &BTreeMap<String, toml::Value>,
) -> Vec<Interval> {
    let exploits = exploits(t);
    let mut settings = values.clone();
    let epochs = t.epochs();
    (1..)
        .map(|k| k * interval.max(1))
        .take_while(|&epoch| epoch < epochs)
        .map(|epoch| {
            let copied = exploits.get(&epoch).map(|e| Copied {
                from: e.from,
                values: e.values.clone(),
            });
            let at = Interval {
                epoch,
                value: t.intermediate.get(&(epoch as i64)).copied(),
                values: settings.clone(),
                copied,
            };
            if let Some(copied) = &at.copied {
                settings = copied.values.clone();
            }
            at
        })
        .collect()
}

fn row(t: &TrialRecord, interval: Option<usize>) -> TrialRow {
    let n = t.number.unwrap_or_default();
    let status = match t.state {
        State::Complete => TrialStatus::Completed,
        State::Pruned => TrialStatus::Pruned,
        State::Fail => TrialStatus::Failed,
        State::Running => TrialStatus::Running,
        State::Waiting => TrialStatus::Paused,
    };
    let values = (t.params.iter())
        .map(|(k, (x, d))| (k.clone(), crate::sweep::journal::params::typed(*x, d)))
        .collect();
    let lineage = interval.map_or(Vec::new(), |i| lineage(t, i, &values));
    TrialRow {
        values: last_values(&lineage, &values),
        lineage,
        status,
        reason: (t.user_attrs.get(REASON).and_then(Value::as_str)).map(str::to_string),
        monitored: t.values.as_ref().and_then(|v| v.first().copied()),
        epochs: (t.user_attrs.get(EPOCHS).and_then(Value::as_u64)).map(|e| e as usize),
        memory: (t.user_attrs.get(MEMORY)).and_then(|m| serde_json::from_value(m.clone()).ok()),
        ..TrialRow::not_run(n)
    }
}

/// Study `study`'s timeline, from the journal at `spec`: each packed trial's runs under its
/// lease ([`SLOT`], the runs of every record of its number, a trial trained again included),
/// and the largest budget and trials at once its workers packed with ([`PACKED`]). A record
/// that is not a slot, or times that are not a run's, are the error naming the journal.
pub fn timeline(journal: &Journal, study: usize, spec: &str) -> Result<Timeline, Error> {
    let refused = |message: String| {
        Error::Sweep(SweepError::Plan {
            origin: spec.to_string(),
            message,
        })
    };
    let mut timeline = Timeline::default();
    for (key, packed) in &journal.studies[study].system_attrs {
        if key.starts_with(PACKED) {
            let number = |k: &str| packed[k].as_u64().unwrap_or(0);
            timeline.budget_bytes = timeline.budget_bytes.max(number("budget_bytes"));
            timeline.parallel = timeline.parallel.max(number("parallel") as usize);
        }
    }
    // Each number's finished runs, and its last record's slot.
    let mut by_number: BTreeMap<usize, (Vec<[f64; 2]>, Slot)> = BTreeMap::new();
    for &id in &journal.studies[study].trials {
        let t = &journal.trials[&id];
        let (Some(n), Some(value)) = (t.number, t.system_attrs.get(SLOT)) else {
            continue;
        };
        let slot: Slot = serde_json::from_value(value.clone())
            .map_err(|e| refused(format!("{}'s {SLOT}: {e}", Trial::name_of(n))))?;
        let (runs, last) = by_number
            .entry(n)
            .or_insert_with(|| (Vec::new(), slot.clone()));
        runs.extend(&slot.earlier);
        if let Some(end) = last.ended_unix {
            runs.push([last.started_unix, end]);
        }
        *last = slot;
    }
    for (n, (mut runs, mut slot)) in by_number {
        // A worker that trained it again kept the runs it knew of: each run once, in order.
        runs.retain(|r| r[0] != slot.started_unix);
        runs.sort_by(|a, b| a[0].total_cmp(&b[0]));
        runs.dedup_by(|a, b| a[0] == b[0]);
        slot.earlier = runs;
        slot.trial = n;
        timeline.slots.insert(n, slot);
    }
    if let Some(why) = timeline.invalid() {
        return Err(refused(format!("{SLOT}: {why}")));
    }
    Ok(timeline)
}

/// Each row's lease and times from `schedule`, where it ran in a child process.
pub fn attach(rows: &mut [TrialRow], schedule: &Timeline) {
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
