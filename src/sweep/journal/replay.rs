//! A journal replayed as Optuna replays it (`JournalStorage`'s `_apply_*`): studies and trials
//! get their ids from the order of the operations that created them, and an operation Optuna
//! would reject (on a missing or finished trial, a second RUNNING) changes nothing here either.
//! The journal's own reader is this; `tidemark report` and the workers read the same state.
//!
//! A worker reads it lean ([`Journal::lean`]): a trial that has finished keeps only what the
//! study's rules read of it ([`Keep`]: its curve for a pruner, its parameters for TPE), and
//! nothing at all where no rule reads it, so that a study's memory does not grow with its
//! finished trials (a random search of 500 trials held 3.5 KiB more a trial when it kept them
//! whole). Its rows (`sweep.json`, `tidemark report`) come from a whole reading.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::attrs::{NUMBER, PAUSED, RETRY_OF};
use super::json::as_float;
use super::op::State;

/// A record Optuna's replay cannot read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BadRecord {
    /// Not an object with an integer `op_code`.
    #[error("a record without an op_code")]
    NoOpCode,
    /// An `op_code` Optuna does not define.
    #[error("op_code {0}, which Optuna does not define")]
    Unknown(i64),
}

/// A study of the journal.
#[derive(Debug, Clone, Default)]
pub struct StudyRecord {
    pub name: String,
    pub system_attrs: Map<String, Value>,
    pub deleted: bool,
    /// Its trials' ids, by Optuna's number (0-based); read lean, those still kept.
    pub trials: Vec<usize>,
    /// Its trials tidemark numbered (with [`NUMBER`]), kept or not.
    pub numbered: usize,
    /// How many of those have finished, by state.
    pub ended: Ended,
}

/// A study's numbered trials that finished, by state.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Ended {
    pub completed: usize,
    pub pruned: usize,
    pub failed: usize,
}

/// What a lean journal keeps of a finished trial, besides its state, number and values.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Keep {
    /// Its intermediate values (a pruner ranks them).
    pub curves: bool,
    /// Its parameters (TPE draws from them).
    pub params: bool,
}

/// A trial of the journal.
#[derive(Debug, Clone)]
pub struct TrialRecord {
    /// The study it belongs to.
    pub study: usize,
    /// Its [`NUMBER`], which tidemark writes as it creates the trial.
    pub number: Option<usize>,
    pub state: State,
    pub values: Option<Vec<f64>>,
    /// Each parameter's internal value and distribution (Optuna's JSON string).
    pub params: BTreeMap<String, (f64, String)>,
    pub intermediate: BTreeMap<i64, f64>,
    pub user_attrs: Map<String, Value>,
    pub system_attrs: Map<String, Value>,
    pub start: Option<String>,
    pub complete: Option<String>,
}

impl TrialRecord {
    /// Whether it waits at a rung or an interval (rather than handed back by a stopped
    /// worker).
    pub fn paused(&self) -> bool {
        self.paused_at().is_some()
    }

    /// The epoch it waits at, paused.
    pub fn paused_at(&self) -> Option<usize> {
        let at = self
            .system_attrs
            .get(PAUSED)
            .and_then(serde_json::Value::as_u64);
        at.filter(|_| self.state == State::Waiting)
            .map(|e| e as usize)
    }

    /// The last epoch with an intermediate value (0 for none).
    pub fn epochs(&self) -> usize {
        self.intermediate.keys().copied().max().unwrap_or(0).max(0) as usize
    }
}

/// What a journal holds so far.
#[derive(Debug, Clone, Default)]
pub struct Journal {
    pub studies: Vec<StudyRecord>,
    /// Its trials by id: every one, or read lean, the unfinished ones and what is kept of
    /// the finished.
    pub trials: BTreeMap<usize, TrialRecord>,
    /// Trial ids given so far (the next trial's id).
    pub made: usize,
    /// Records applied (the next one's log number).
    pub read: usize,
    /// Read lean: what a finished trial keeps.
    lean: Option<Keep>,
}

impl Journal {
    /// A journal read lean: each trial, once finished, keeps what `keep` says and no more.
    pub fn lean(keep: Keep) -> Journal {
        Journal {
            lean: Some(keep),
            ..Journal::default()
        }
    }

    /// Whether it holds every trial whole.
    pub fn whole(&self) -> bool {
        self.lean.is_none()
    }

    /// The live study named `name`.
    pub fn study(&self, name: &str) -> Option<usize> {
        (self.studies.iter()).position(|s| s.name == name && !s.deleted)
    }

    /// Applies one record; one that is not an object with a known `op_code` is an error.
    pub fn apply(&mut self, record: &Value) -> Result<(), BadRecord> {
        self.read += 1;
        let code = record["op_code"].as_i64().ok_or(BadRecord::NoOpCode)?;
        match code {
            0 => self.create_study(record),
            1 => {
                if let Some(s) = self.live_study(record) {
                    s.deleted = true;
                }
            }
            2 => {}
            3 => {
                if let (Some(s), Some(attr)) = (self.live_study(record), one(record, "system_attr"))
                {
                    s.system_attrs.extend(attr);
                }
            }
            4 => self.create_trial(record),
            5..=9 => self.change_trial(code, record),
            10 => {}
            other => return Err(BadRecord::Unknown(other)),
        }
        Ok(())
    }

    fn live_study(&mut self, record: &Value) -> Option<&mut StudyRecord> {
        let id = record["study_id"].as_u64()? as usize;
        self.studies.get_mut(id).filter(|s| !s.deleted)
    }

    fn create_study(&mut self, record: &Value) {
        let name = record["study_name"].as_str().unwrap_or_default();
        if self.study(name).is_some() {
            return;
        }
        self.studies.push(StudyRecord {
            name: name.to_string(),
            ..StudyRecord::default()
        });
    }

    /// Op 4, plain (`study.ask()`) or a template (`add_trial`, `enqueue_trial`).
    fn create_trial(&mut self, record: &Value) {
        let id = self.made;
        let study_id = record["study_id"].as_u64().unwrap_or_default() as usize;
        let Some(study) = self.live_study(record) else {
            return;
        };
        study.trials.push(id);
        self.made += 1;
        let state = (record["state"].as_i64()).and_then(State::of);
        let value = as_float(&record["value"]).map(|v| vec![v]);
        let values = (record["values"].as_array())
            .map(|vs| vs.iter().filter_map(as_float).collect())
            .or(value);
        let text = |key: &str| record[key].as_str().map(str::to_string);
        let params = (record["params"].as_object().into_iter().flatten())
            .filter_map(|(name, v)| {
                let distribution = record["distributions"][name].as_str()?;
                Some((name.clone(), (as_float(v)?, distribution.to_string())))
            })
            .collect();
        let intermediate = (record["intermediate_values"]
            .as_object()
            .into_iter()
            .flatten())
        .filter_map(|(step, v)| Some((step.parse().ok()?, as_float(v)?)))
        .collect();
        let attrs = |key: &str| record[key].as_object().cloned().unwrap_or_default();
        let system_attrs = attrs("system_attrs");
        self.trials.insert(
            id,
            TrialRecord {
                study: study_id,
                number: None,
                state: state.unwrap_or(State::Running),
                values,
                params,
                intermediate,
                user_attrs: attrs("user_attrs"),
                system_attrs,
                start: text("datetime_start"),
                complete: text("datetime_complete"),
            },
        );
        self.changed(id);
    }

    /// After trial `id` changed: its number counted once it has one, its end once it has
    /// finished, and, read lean, all but what is kept of it let go.
    fn changed(&mut self, id: usize) {
        let Some(trial) = self.trials.get_mut(&id) else {
            return;
        };
        let study = &mut self.studies[trial.study];
        if trial.number.is_none() {
            trial.number = (trial.system_attrs.get(NUMBER))
                .and_then(Value::as_u64)
                .map(|n| n as usize);
            // A trial trained again under its number is not a new one of the plan, and the
            // trial it takes the place of no longer counts as ended.
            let again = trial.system_attrs.get(RETRY_OF);
            study.numbered += usize::from(trial.number.is_some() && again.is_none());
            let ended = &mut study.ended;
            match again.and_then(|a| a["ended"].as_str()) {
                Some("failed") => ended.failed = ended.failed.saturating_sub(1),
                Some("completed") => ended.completed = ended.completed.saturating_sub(1),
                _ => {}
            }
        }
        if !trial.state.finished() {
            return;
        }
        if trial.number.is_some() {
            let ended = &mut study.ended;
            match trial.state {
                State::Complete => ended.completed += 1,
                State::Pruned => ended.pruned += 1,
                _ => ended.failed += 1,
            }
        }
        let Some(keep) = self.lean else {
            return;
        };
        if !keep.curves && !keep.params {
            self.trials.remove(&id);
            study.trials.retain(|&t| t != id);
            return;
        }
        trial.user_attrs = Map::new();
        trial.system_attrs = Map::new();
        (trial.start, trial.complete) = (None, None);
        if !keep.curves {
            trial.intermediate = BTreeMap::new();
        }
        if !keep.params {
            trial.params = BTreeMap::new();
        }
    }

    /// Ops 5 to 9, on a trial that exists and has not finished.
    fn change_trial(&mut self, code: i64, record: &Value) {
        let Some(id) = record["trial_id"].as_u64().map(|id| id as usize) else {
            return;
        };
        let Some(trial) = (self.trials.get_mut(&id)).filter(|t| !t.state.finished()) else {
            return;
        };
        match code {
            5 => {
                let name = record["param_name"].as_str().unwrap_or_default();
                let internal = as_float(&record["param_value_internal"]);
                if let (Some(x), Some(d)) = (internal, record["distribution"].as_str()) {
                    trial.params.insert(name.to_string(), (x, d.to_string()));
                }
            }
            6 => set_state(trial, record),
            7 => {
                let step = record["step"].as_i64();
                if let (Some(step), Some(v)) = (step, as_float(&record["intermediate_value"])) {
                    trial.intermediate.insert(step, v);
                }
            }
            8 => trial
                .user_attrs
                .extend(one(record, "user_attr").unwrap_or_default()),
            _ => trial
                .system_attrs
                .extend(one(record, "system_attr").unwrap_or_default()),
        }
        self.changed(id);
    }
}

/// Op 6: a second RUNNING is refused (the first worker to claim a waiting trial has it).
fn set_state(trial: &mut TrialRecord, record: &Value) {
    let Some(state) = record["state"].as_i64().and_then(State::of) else {
        return;
    };
    if state == State::Running && trial.state == State::Running {
        return;
    }
    let at = |key: &str| record[key].as_str().map(str::to_string);
    match state {
        State::Running => trial.start = at("datetime_start"),
        s if s.finished() => trial.complete = at("datetime_complete"),
        _ => {}
    }
    trial.state = state;
    if let Some(values) = record["values"].as_array() {
        trial.values = Some(values.iter().filter_map(as_float).collect());
    }
}

/// An attribute object of one key, as ops 2, 3, 8 and 9 carry it.
fn one(record: &Value, key: &str) -> Option<Map<String, Value>> {
    record[key].as_object().filter(|m| m.len() == 1).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn replay(records: &[Value]) -> Journal {
        let mut journal = Journal::default();
        for r in records {
            journal.apply(r).unwrap();
        }
        journal
    }

    #[test]
    fn ids_and_rejections_follow_optunas_replay() {
        let w = |mut v: Value| {
            v["worker_id"] = json!("w");
            v
        };
        let journal = replay(&[
            w(json!({"op_code": 0, "study_name": "a", "directions": [1]})),
            w(json!({"op_code": 0, "study_name": "a", "directions": [2]})),
            w(json!({"op_code": 0, "study_name": "b", "directions": [1]})),
            w(json!({"op_code": 4, "study_id": 1, "datetime_start": null})),
            w(json!({"op_code": 4, "study_id": 7, "datetime_start": null})),
            w(json!({"op_code": 4, "study_id": 0, "datetime_start": null})),
            w(
                json!({"op_code": 6, "trial_id": 1, "state": 0, "values": null,
                     "datetime_start": "x"}),
            ),
            w(
                json!({"op_code": 6, "trial_id": 1, "state": 1, "values": [0.5],
                     "datetime_complete": "y"}),
            ),
            w(
                json!({"op_code": 6, "trial_id": 1, "state": 3, "values": null,
                     "datetime_complete": "z"}),
            ),
            w(json!({"op_code": 7, "trial_id": 1, "step": 1, "intermediate_value": 1.0})),
            w(json!({"op_code": 6, "trial_id": 0, "state": 4, "values": null})),
            w(
                json!({"op_code": 6, "trial_id": 0, "state": 0, "values": null,
                     "datetime_start": "s"}),
            ),
        ]);
        // The second "a" is ignored; a trial of a missing study takes no id.
        assert_eq!(journal.studies.len(), 2);
        assert_eq!(journal.study("b"), Some(1));
        assert_eq!(journal.studies[1].trials, [0]);
        assert_eq!(journal.studies[0].trials, [1]);
        // The first end wins; nothing changes a finished trial.
        let t = &journal.trials[&1];
        assert_eq!(
            (t.state, t.values.clone()),
            (State::Complete, Some(vec![0.5]))
        );
        assert!(t.intermediate.is_empty());
        assert_eq!(t.complete.as_deref(), Some("y"));
        // A waiting trial is claimed by the first RUNNING.
        assert_eq!(journal.trials[&0].state, State::Running);
        assert_eq!(journal.trials[&0].start.as_deref(), Some("s"));
        assert_eq!(journal.read, 12);
        let mut bad = journal.clone();
        assert!(bad.apply(&json!({"op_code": 11})).is_err());
    }

    /// Read lean, a finished trial keeps its state, number and values, with its curve or its
    /// parameters where a rule reads them, and no more; nothing at all where none does. Its
    /// study still counts it, a change to it is still refused, and the next trial's id is the
    /// one a whole reading gives.
    #[test]
    fn a_lean_reading_lets_finished_trials_go_but_what_its_rules_read() {
        let w = |mut v: Value| {
            v["worker_id"] = json!("w");
            v
        };
        let numbered = |n: usize| {
            w(json!({"op_code": 4, "study_id": 0, "datetime_start": "s",
                     "system_attrs": {"tidemark:trial": n, "tidemark:worker": "w"}}))
        };
        let records = [
            w(json!({"op_code": 0, "study_name": "a", "directions": [1]})),
            numbered(1),
            numbered(2),
            numbered(3),
            w(json!({"op_code": 5, "trial_id": 0, "param_name": "lr",
                     "param_value_internal": 0.1, "distribution": "{}"})),
            w(json!({"op_code": 7, "trial_id": 0, "step": 1, "intermediate_value": 0.5})),
            w(json!({"op_code": 8, "trial_id": 0, "user_attr": {"tidemark:memory": {"a": 1}}})),
            w(
                json!({"op_code": 6, "trial_id": 0, "state": 1, "values": [0.5],
                     "datetime_complete": "c"}),
            ),
            w(json!({"op_code": 6, "trial_id": 1, "state": 2, "values": [0.9]})),
            // Refused: trial 0 has finished, whether or not it is still held.
            w(json!({"op_code": 7, "trial_id": 0, "step": 2, "intermediate_value": 0.1})),
            w(json!({"op_code": 6, "trial_id": 0, "state": 4, "values": null})),
        ];
        let read = |mut journal: Journal| {
            for r in &records {
                journal.apply(r).unwrap();
            }
            journal
        };
        let whole = read(Journal::default());
        let nothing = read(Journal::lean(Keep::default()));
        let curves = read(Journal::lean(Keep {
            curves: true,
            params: false,
        }));
        let params = read(Journal::lean(Keep {
            curves: false,
            params: true,
        }));
        let ended = Ended {
            completed: 1,
            pruned: 1,
            failed: 0,
        };
        for j in [&whole, &nothing, &curves, &params] {
            assert_eq!((j.made, j.read), (3, 11));
            assert_eq!((j.studies[0].numbered, j.studies[0].ended), (3, ended));
            assert_eq!(j.trials[&2].state, State::Running);
            assert_eq!(j.trials[&2].system_attrs, whole.trials[&2].system_attrs);
        }
        assert!(whole.whole() && !nothing.whole());
        assert_eq!(whole.studies[0].trials, [0, 1, 2]);
        assert_eq!(nothing.studies[0].trials, [2]);
        assert_eq!(nothing.trials.keys().collect::<Vec<_>>(), [&2]);
        let kept = &curves.trials[&0];
        assert_eq!((kept.state, kept.number), (State::Complete, Some(1)));
        assert_eq!(kept.values, Some(vec![0.5]));
        assert_eq!(kept.intermediate, BTreeMap::from([(1, 0.5)]));
        assert!(kept.params.is_empty() && kept.user_attrs.is_empty());
        assert!(kept.system_attrs.is_empty() && kept.complete.is_none());
        let kept = &params.trials[&0];
        assert!(kept.intermediate.is_empty());
        assert_eq!(kept.params["lr"], (0.1, "{}".to_string()));
        assert_eq!(
            whole.trials[&0].user_attrs["tidemark:memory"],
            json!({"a": 1})
        );
        assert_eq!(whole.trials[&0].intermediate.len(), 1);
    }

    /// Op 10 (`DISCARD_TRIALS`, written by Rustuna) is skipped, as Optuna 5's replay skips it:
    /// it counts as read and changes no study or trial.
    #[test]
    fn rustunas_discard_is_read_and_skipped_as_optuna_does() {
        let create = json!({"op_code": 0, "study_name": "a", "directions": [1], "worker_id": "w"});
        let trial = json!({"op_code": 4, "study_id": 0, "datetime_start": null, "worker_id": "w"});
        let discard = json!({"op_code": 10, "study_id": 0, "trial_ids": [0], "worker_id": "r"});
        let plain = replay(&[create.clone(), trial.clone()]);
        let with = replay(&[create, discard, trial]);
        assert_eq!(with.read, plain.read + 1);
        assert_eq!(with.studies[0].trials, plain.studies[0].trials);
        assert_eq!(with.trials.len(), 1);
        assert_eq!(with.trials[&0].state, plain.trials[&0].state);
    }
}
