//! ASHA across a study's workers (`[sweep.prune] method = "asha"` with `--storage`): the
//! decisions are the one-machine search's ([`asha`]), made under the journal's lock on a record
//! rebuilt from the journal, so that a rung ranks every trial of the study, whoever trained it.
//!
//! A trial paused at a rung is WAITING in the journal, with the rung in its system attribute
//! `tidemark:paused`; a worker that promotes it claims it back to RUNNING. When every trial has
//! been created, none runs and none can be promoted, the paused trials are pruned (PRUNED, with
//! their last value, as Optuna records a pruned trial); unless no trial has trained to the end,
//! when the best at the highest rung goes on first.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::config::MonitorMode;
use crate::sweep::journal::attrs::{PAUSED, PROMOTED, REASON, WORKER};
use crate::sweep::journal::op::{now, Op, State};
use crate::sweep::journal::replay::TrialRecord;
use crate::sweep::prune::asha;
use crate::sweep::prune::{Curve, Record, Standing};

/// ASHA's settings for a study.
/// The operations that prune the paused trials, with each one's number and why.
pub type Settled = (Vec<Op>, Vec<(usize, String)>);

#[derive(Debug, Clone)]
pub struct Rungs {
    pub rungs: Vec<usize>,
    pub reduction: usize,
    pub mode: MonitorMode,
    pub monitor: String,
}

impl Rungs {
    /// A paused trial to promote now, by id, with the rung it waits at.
    pub fn promotable(&self, trials: &[(usize, &TrialRecord)]) -> Option<usize> {
        let (record, ids) = record_of(&self.monitor, trials);
        let n = asha::promotable(&record, &self.rungs, self.mode, self.reduction)?;
        ids.get(&n).copied()
    }

    /// With every trial created and none running or promotable: the best paused at the highest
    /// rung if no trial has trained to the end (to promote), else the operations that prune the
    /// paused ones.
    pub fn settle(&self, trials: &[(usize, &TrialRecord)]) -> Result<usize, Settled> {
        let (record, ids) = record_of(&self.monitor, trials);
        let done = (record.trials.values()).any(|c| c.standing == Standing::Completed);
        let mut rungs: Vec<usize> = (record.trials.values())
            .filter(|c| c.standing == Standing::Paused)
            .map(Curve::epochs)
            .collect();
        rungs.sort_unstable_by(|a, b| b.cmp(a));
        if !done {
            let best = rungs
                .iter()
                .find_map(|&rung| asha::best_paused_at(&record, rung, self.mode));
            if let Some(n) = best {
                return Ok(ids[&n]);
            }
        }
        let (mut ops, mut pruned) = (Vec::new(), Vec::new());
        for (n, curve) in &record.trials {
            if curve.standing != Standing::Paused {
                continue;
            }
            let rung = curve.epochs();
            let why = asha::left_behind(&record, *n, rung, self.mode, self.reduction);
            let id = ids[n];
            ops.push(Op::UserAttr {
                trial: id,
                key: REASON.into(),
                value: json!(why),
            });
            pruned.push((*n, why));
            ops.push(Op::State {
                trial: id,
                state: State::Pruned,
                values: curve.at(rung).map(|v| vec![v]),
                at: now(),
            });
        }
        Err((ops, pruned))
    }

    /// The operations that claim paused trial `id` back to RUNNING for `worker`.
    pub fn promote(id: usize, rung: usize) -> Vec<Op> {
        let attr = |key: &str, value| Op::SystemAttr {
            trial: id,
            key: key.into(),
            value,
        };
        vec![
            Op::State {
                trial: id,
                state: State::Running,
                values: None,
                at: now(),
            },
            attr(PAUSED, Value::Null),
            attr(PROMOTED, json!(rung)),
        ]
    }

    /// The operations that pause trial `id` at `rung` (its run ended there).
    pub fn pause(id: usize, rung: usize) -> Vec<Op> {
        let attr = |key: &str, value| Op::SystemAttr {
            trial: id,
            key: key.into(),
            value,
        };
        vec![
            attr(PAUSED, json!(rung)),
            attr(WORKER, Value::Null),
            Op::State {
                trial: id,
                state: State::Waiting,
                values: None,
                at: now(),
            },
        ]
    }
}

/// The record the pruners decide on: each of `trials`' curve of `monitor` from its intermediate
/// values, by trial number, with the trials' ids by number.
pub fn record_of(
    monitor: &str,
    trials: &[(usize, &TrialRecord)],
) -> (Record, BTreeMap<usize, usize>) {
    let mut ids = BTreeMap::new();
    let mut record = Record {
        monitor: monitor.to_string(),
        trials: BTreeMap::new(),
    };
    for &(id, t) in trials {
        let Some(n) = t.number else { continue };
        let values = (1..=t.epochs() as i64)
            .map(|e| t.intermediate.get(&e).copied())
            .collect();
        let standing = match t.state {
            State::Complete => Standing::Completed,
            State::Pruned => Standing::Pruned,
            State::Fail => Standing::Failed,
            State::Waiting if t.paused() => Standing::Paused,
            _ => Standing::Running,
        };
        let reason = None;
        record.trials.insert(
            n,
            Curve {
                values,
                standing,
                reason,
            },
        );
        ids.insert(n, id);
    }
    (record, ids)
}
