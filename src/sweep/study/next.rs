//! A worker's next piece of work, decided from the whole study under the journal's lock:
//! 1. a trial handed back (WAITING: its worker was stopped by a signal), or one whose worker
//!    stopped beating for longer than the grace period: taken over, from its latest checkpoint
//!    where this worker can read its run directory;
//! 2. else the next new trial: the plan's next (grid, random, TPE's random start), or one TPE
//!    draws from every finished trial of the study, whichever worker trained it;
//! 3. else, while other workers' trials run, wait (one may die and need taking over);
//! 4. else the study is done.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::joined::Study;
use super::op::{now, Op, State};
use super::params::{distribution, internal, values_of};
use super::replay::{Journal, TrialRecord};
use crate::sweep::space::Trial;

/// The system attributes tidemark keeps on a trial.
pub const NUMBER: &str = "tidemark:trial";
pub const WORKER: &str = "tidemark:worker";
pub const BEAT: &str = "tidemark:heartbeat";
pub const DRAWN_FROM: &str = "tidemark:drawn_from";

/// What a worker does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Work {
    /// Train trial `trial` (its id in the journal), from its checkpoint if it has one.
    Train {
        id: usize,
        trial: Trial,
        /// Whose trial it was.
        from: From,
    },
    /// Other workers' trials are running: look again later.
    Wait,
    /// Every trial of the study has finished.
    Done,
}

/// Where a trial a worker trains comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum From {
    /// Created just now by this worker.
    New,
    /// Handed back by a worker that a signal stopped.
    HandedBack,
    /// Taken over from this worker, silent for longer than the grace period.
    Silent(String),
}

/// When this worker last saw each running trial's heartbeat change (its own clock, so that
/// workers need not agree on the time).
#[derive(Debug, Default)]
pub struct Beats {
    seen: HashMap<usize, (Value, Instant)>,
}

impl Beats {
    /// Whether running trial `id` has not beaten for `grace`.
    fn silent(&mut self, id: usize, trial: &TrialRecord, grace: Duration) -> bool {
        let beat = json!([trial.system_attrs.get(WORKER), trial.system_attrs.get(BEAT)]);
        let seen = self
            .seen
            .entry(id)
            .or_insert((beat.clone(), Instant::now()));
        if seen.0 != beat {
            *seen = (beat, Instant::now());
        }
        seen.1.elapsed() > grace
    }
}

/// The next work of `study` for `worker`, with the operations that claim it.
pub fn next(journal: &Journal, study: &Study, worker: &str, beats: &mut Beats) -> (Vec<Op>, Work) {
    let trials = ours(journal, study.id);
    let claim = |id: usize, trial: &TrialRecord| {
        let mut ops = Vec::new();
        if trial.state == State::Waiting {
            ops.push(Op::State {
                trial: id,
                state: State::Running,
                values: None,
                at: now(),
            });
        }
        ops.extend(owner(id, worker));
        let from = match trial.system_attrs.get(WORKER).and_then(Value::as_str) {
            Some(w) if trial.state == State::Running => From::Silent(w.to_string()),
            _ => From::HandedBack,
        };
        let work = match values_of(&study.vary, &trial.params) {
            Some(values) => Work::Train {
                id,
                trial: Trial {
                    number: number(trial).unwrap_or_default(),
                    values,
                },
                from,
            },
            None => Work::Wait,
        };
        (ops, work)
    };
    if let Some(&(id, trial)) = trials.iter().find(|(_, t)| t.state == State::Waiting) {
        return claim(id, trial);
    }
    let running = trials.iter().filter(|(_, t)| t.state == State::Running);
    let mut others = false;
    for &(id, trial) in running {
        let mine = trial.system_attrs.get(WORKER).and_then(Value::as_str) == Some(worker);
        if !mine && beats.silent(id, trial, study.grace) {
            return claim(id, trial);
        }
        others |= !mine;
    }
    let last = trials
        .iter()
        .filter_map(|(_, t)| number(t))
        .max()
        .unwrap_or(0);
    if last < study.trials {
        return create(journal, study, worker, last + 1, &trials);
    }
    (Vec::new(), if others { Work::Wait } else { Work::Done })
}

/// The study's trials that tidemark made, with their ids.
fn ours(journal: &Journal, study: usize) -> Vec<(usize, &TrialRecord)> {
    (journal.studies[study].trials.iter())
        .map(|&id| (id, &journal.trials[id]))
        .filter(|(_, t)| number(t).is_some())
        .collect()
}

/// A trial's 1-based number, which tidemark writes as it creates the trial.
pub fn number(trial: &TrialRecord) -> Option<usize> {
    trial.system_attrs.get(NUMBER)?.as_u64().map(|n| n as usize)
}

/// The operations that make `worker` the owner of trial `id`, beating now.
fn owner(id: usize, worker: &str) -> [Op; 2] {
    [
        Op::SystemAttr {
            trial: id,
            key: WORKER.into(),
            value: json!(worker),
        },
        beat(id),
    ]
}

/// A heartbeat of trial `id`: the time it was written (for people; workers compare changes).
pub fn beat(id: usize) -> Op {
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    Op::SystemAttr {
        trial: id,
        key: BEAT.into(),
        value: json!((unix * 1000.0).round() / 1000.0),
    }
}

/// Creates trial `number`: its id is the journal's next (this worker holds the lock).
fn create(
    journal: &Journal,
    study: &Study,
    worker: &str,
    number: usize,
    trials: &[(usize, &TrialRecord)],
) -> (Vec<Op>, Work) {
    let id = journal.trials.len();
    let (trial, drawn_from) = study.trial(number, &history(study, trials));
    let mut ops = vec![Op::CreateTrial {
        study: study.id,
        start: now(),
    }];
    for (key, domain) in &study.vary {
        let value = &trial.values[key];
        ops.push(Op::Param {
            trial: id,
            name: key.clone(),
            internal: internal(domain, value).expect("a trial's value is in its domain"),
            distribution: distribution(domain),
        });
    }
    let attr = |key: &str, value: Value| Op::SystemAttr {
        trial: id,
        key: key.into(),
        value,
    };
    ops.push(attr(NUMBER, json!(number)));
    if let Some(from) = drawn_from {
        ops.push(attr(DRAWN_FROM, json!(from)));
    }
    ops.extend(owner(id, worker));
    (
        ops,
        Work::Train {
            id,
            trial,
            from: From::New,
        },
    )
}

/// The study's finished trials with a value (completed, or pruned after reporting one): TPE's
/// history, by number.
fn history(study: &Study, trials: &[(usize, &TrialRecord)]) -> BTreeMap<usize, (Trial, f64)> {
    (trials.iter())
        .filter(|(_, t)| matches!(t.state, State::Complete | State::Pruned))
        .filter_map(|(_, t)| {
            let value = *t.values.as_ref()?.first()?;
            let values = values_of(&study.vary, &t.params)?;
            let number = number(t)?;
            Some((number, (Trial { number, values }, value)))
        })
        .collect()
}
