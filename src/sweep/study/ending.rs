//! How a trial of the study ended, written to it: its value (COMPLETE), why it failed (FAIL),
//! pruned by the median rule (PRUNED, its last value and why), paused at ASHA's rung, or
//! handed back (WAITING, no owner) when a signal stopped its worker; and written only while
//! the trial is still the worker's, not taken over meanwhile (whose result it is then). The same for a trial trained in this process or in a child.

use std::sync::{Arc, Mutex};

use serde_json::json;

use super::rungs::Rungs;
use super::storage::Storage;
use crate::error::Error;
use crate::record::{RunStatus, RunSummary};
use crate::sweep::journal::attrs::{ended, WORKER};
use crate::sweep::journal::op::{now, Op, State};
use crate::sweep::results::SweepRow;
use crate::sweep::space::Trial;

/// How a trial's training ended.
#[derive(Debug)]
pub enum Outcome {
    /// It ran to its end, or to its rung (paused), or was pruned.
    Trained(RunStatus),
    /// A signal stopped its worker: it goes back to the study.
    Stopped,
    /// It failed, for this reason.
    Failed(String),
}

/// The operations that end trial `id` (`trial`), which monitors `monitor`; `summary` is its
/// run's, where it has one.
pub fn ending(
    id: usize,
    trial: &Trial,
    monitor: &str,
    outcome: &Outcome,
    summary: Option<&RunSummary>,
) -> Vec<Op> {
    let value = summary.and_then(|s| s.monitored(monitor));
    let (state, values, reason) = match (outcome, value) {
        (Outcome::Stopped, _) => (State::Waiting, None, None),
        (Outcome::Trained(RunStatus::Completed), Some(v)) => (State::Complete, Some(vec![v]), None),
        (Outcome::Trained(RunStatus::Paused), _) => (State::Waiting, None, None),
        // The median rule stopped it: PRUNED with its last value, as Optuna records one.
        (Outcome::Trained(RunStatus::Pruned), v) => {
            let why = summary.and_then(|s| s.stopped_by.clone());
            (State::Pruned, v.map(|v| vec![v]), why)
        }
        (Outcome::Trained(_), _) => (State::Fail, None, Some(format!("it recorded no {monitor}"))),
        (Outcome::Failed(e), _) => (State::Fail, None, Some(e.clone())),
    };
    let memory = summary
        .map(|s| serde_json::to_value(SweepRow::of(trial.number, s.clone())))
        .map(|m| m.expect("a row serialises"));
    let mut ops = ended(id, summary.map(|s| s.epochs), memory, reason.as_deref());
    match outcome {
        // Paused at its rung: WAITING there, for ASHA to promote or prune.
        Outcome::Trained(RunStatus::Paused) => {
            let epochs = summary.map_or(0, |s| s.epochs);
            // Its value there, which the rung or the population decides on, from its own
            // summary: in the journal with the pause even where the epoch's report was lost.
            let last = summary.and_then(|s| {
                crate::config::Monitor::value_of(monitor, s.final_val_loss, |k| s.metric(k))
            });
            if let Some(value) = last {
                ops.push(Op::Intermediate {
                    trial: id,
                    step: epochs,
                    value,
                });
            }
            ops.extend(Rungs::pause(id, epochs));
            return ops;
        }
        // Stopped by a signal: handed back, with no owner.
        Outcome::Stopped => ops.push(Op::SystemAttr {
            trial: id,
            key: WORKER.into(),
            value: json!(null),
        }),
        _ => {}
    }
    ops.push(Op::State {
        trial: id,
        state,
        values,
        at: now(),
    });
    ops
}

/// Appends `ops`, the end of trial `id`, if it is still running as this worker's; whether it
/// was.
pub fn record(storage: &Arc<Mutex<Storage>>, id: usize, ops: Vec<Op>) -> Result<bool, Error> {
    (storage.lock().expect("storage")).transact(|journal, me| {
        // A trial no longer in the journal's memory has finished.
        let running = journal
            .trials
            .get(&id)
            .filter(|t| t.state == State::Running);
        let owner = running.and_then(|t| t.system_attrs.get(WORKER)?.as_str());
        match owner == Some(me) {
            true => (ops.clone(), true),
            false => (Vec::new(), false),
        }
    })
}
