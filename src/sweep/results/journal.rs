//! `journal.log` in a search's sweep directory: the search's trials in Optuna's journal format
//! (one study, named after the search's `run.name`), written beside `sweep.json` from the same
//! rows, so that Optuna's tools read any search, not only a shared study: each trial's params
//! (with their distributions), state, value, intermediate values (the monitor after each epoch,
//! from its snapshots) and what it took. Its datetimes are when the journal was written, not
//! when the trials ran (their runs' snapshots have that).

use std::path::Path;

use serde_json::json;

use super::rank::{TrialRow, TrialStatus};
use crate::config::MonitorMode;
use crate::error::Error;
use crate::record::write_atomic;
use crate::sweep::journal::attrs::{ended, NUMBER, PAUSED, PLAN};
use crate::sweep::journal::json::line;
use crate::sweep::journal::op::{now, Op, State};
use crate::sweep::journal::params::param_ops;
use crate::sweep::plan::SearchPlan;
use crate::sweep::prune::read_curve;

/// The worker id the records carry.
const WRITER: &str = "tidemark-search";

/// Writes `journal.log` in `dir` for `rows` (nothing for a plan that keeps no varied keys).
pub(in crate::sweep) fn write_journal(
    dir: &Path,
    plan: &SearchPlan,
    rows: &[TrialRow],
) -> Result<(), Error> {
    if plan.vary.is_empty() {
        return Ok(());
    }
    let name = (dir.file_name().and_then(|n| n.to_str()))
        .map(|n| n.trim_end_matches("-sweep").to_string())
        .unwrap_or_default();
    let direction = match plan.mode {
        MonitorMode::Min => 1,
        MonitorMode::Max => 2,
    };
    let mut ops = vec![
        Op::CreateStudy {
            name,
            directions: vec![direction],
        },
        Op::StudySystemAttr {
            study: 0,
            key: PLAN.into(),
            value: json!({"monitor": plan.monitor, "mode": plan.mode, "trials": plan.trials.len()}),
        },
    ];
    let mut ordered: Vec<&TrialRow> = rows
        .iter()
        .filter(|r| r.status != TrialStatus::NotRun)
        .collect();
    ordered.sort_by_key(|r| r.trial);
    for (id, row) in ordered.into_iter().enumerate() {
        ops.extend(trial_ops(dir, plan, row, id)?);
    }
    let text: String = (ops.iter())
        .map(|op| line(&op.record(WRITER)) + "\n")
        .collect();
    let path = dir.join("journal.log");
    write_atomic(&path, text.as_bytes()).map_err(|e| Error::io(&path, e))
}

/// The operations of one trial (journal id `id`).
fn trial_ops(dir: &Path, plan: &SearchPlan, row: &TrialRow, id: usize) -> Result<Vec<Op>, Error> {
    let system = |key: &str, value| Op::SystemAttr {
        trial: id,
        key: key.into(),
        value,
    };
    // Created in one record, with its parameters and number, as a study's workers create one.
    let mut made = param_ops(id, &plan.vary, &plan.trials[row.trial - 1].values);
    made.push(system(NUMBER, json!(row.trial)));
    let mut ops = Op::create_whole(0, now(), made);
    let curve = read_curve(&dir.join(&row.name), &plan.monitor)?;
    for (epoch, value) in curve.iter().enumerate() {
        if let Some(value) = value {
            ops.push(Op::Intermediate {
                trial: id,
                step: epoch + 1,
                value: *value,
            });
        }
    }
    let memory = (row.memory.as_ref()).map(|m| serde_json::to_value(m).expect("a row serialises"));
    ops.extend(ended(id, row.epochs, memory, row.reason.as_deref()));
    let state = match row.status {
        TrialStatus::Completed => State::Complete,
        TrialStatus::Pruned => State::Pruned,
        TrialStatus::Failed => State::Fail,
        TrialStatus::Paused => {
            ops.push(system(PAUSED, json!(curve.len())));
            State::Waiting
        }
        TrialStatus::Running | TrialStatus::NotRun => return Ok(ops),
    };
    let values = match state {
        State::Complete | State::Pruned => row.monitored.map(|v| vec![v]),
        _ => None,
    };
    ops.push(Op::State {
        trial: id,
        state,
        values,
        at: now(),
    });
    Ok(ops)
}
