//! The operations tidemark writes to a study's journal, as Optuna 5's `JournalStorage`
//! encodes them (docs/design/optuna-journal.md): one JSON object a line, with `op_code` and
//! `worker_id` among its keys (in any order: Python reads them by name). Op 10 (`DISCARD_TRIALS`, which Optuna 5.0's release candidate cannot read)
//! and the deletes are never written.

use serde_json::{json, Map, Value};

use super::json::float;

/// Optuna's `TrialState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Being trained by a worker.
    Running = 0,
    /// Every epoch trained; its value is the monitored metric.
    Complete = 1,
    /// Stopped by the pruner.
    Pruned = 2,
    /// Stopped by an error.
    Fail = 3,
    /// Handed back (a worker stopped by a signal), to be taken by the next worker.
    Waiting = 4,
}

impl State {
    /// The state of Optuna's integer.
    pub fn of(code: i64) -> Option<State> {
        [
            State::Running,
            State::Complete,
            State::Pruned,
            State::Fail,
            State::Waiting,
        ]
        .into_iter()
        .find(|s| *s as i64 == code)
    }

    /// Complete, pruned or failed: Optuna ignores any later change of such a trial.
    pub fn finished(self) -> bool {
        matches!(self, State::Complete | State::Pruned | State::Fail)
    }
}

/// One operation.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// `CREATE_STUDY` (0): directions are Optuna's `MINIMIZE` (1) or `MAXIMIZE` (2).
    CreateStudy { name: String, directions: Vec<u8> },
    /// `SET_STUDY_SYSTEM_ATTR` (3).
    StudySystemAttr {
        study: usize,
        key: String,
        value: Value,
    },
    /// `CREATE_TRIAL` (4): RUNNING, as `study.ask()` writes it, or with its parameters (name,
    /// internal value, distribution) and system attributes in the one record, as a template
    /// (`add_trial`) is: a writer killed part-way through appending then cannot leave the
    /// trial half made.
    CreateTrial {
        study: usize,
        start: String,
        params: Vec<(String, f64, String)>,
        system: Map<String, Value>,
    },
    /// `SET_TRIAL_PARAM` (5): the value in Optuna's internal form, the distribution as the
    /// JSON string Optuna embeds.
    Param {
        trial: usize,
        name: String,
        internal: f64,
        distribution: String,
    },
    /// `SET_TRIAL_STATE_VALUES` (6), with `datetime_start` for RUNNING and
    /// `datetime_complete` for a finished state (`at`).
    State {
        trial: usize,
        state: State,
        values: Option<Vec<f64>>,
        at: String,
    },
    /// `SET_TRIAL_INTERMEDIATE_VALUE` (7): the monitored value after epoch `step`.
    Intermediate {
        trial: usize,
        step: usize,
        value: f64,
    },
    /// `SET_TRIAL_USER_ATTR` (8).
    UserAttr {
        trial: usize,
        key: String,
        value: Value,
    },
    /// `SET_TRIAL_SYSTEM_ATTR` (9).
    SystemAttr {
        trial: usize,
        key: String,
        value: Value,
    },
}

impl Op {
    /// Trial creation in one record: `ops` (the new trial's parameters and system attributes)
    /// folded into its `CREATE_TRIAL`; any other of `ops` follows it.
    pub fn create_whole(study: usize, start: String, ops: Vec<Op>) -> Vec<Op> {
        let (mut params, mut system, mut rest) = (Vec::new(), Map::new(), Vec::new());
        for op in ops {
            match op {
                Op::Param {
                    name,
                    internal,
                    distribution,
                    ..
                } => params.push((name, internal, distribution)),
                Op::SystemAttr { key, value, .. } => {
                    system.insert(key, value);
                }
                other => rest.push(other),
            }
        }
        let create = Op::CreateTrial {
            study,
            start,
            params,
            system,
        };
        std::iter::once(create).chain(rest).collect()
    }

    /// The record `worker` appends, as a JSON object.
    pub fn record(&self, worker: &str) -> Value {
        let (code, fields) = match self {
            Op::CreateStudy { name, directions } => {
                (0, json!({"study_name": name, "directions": directions}))
            }
            Op::StudySystemAttr { study, key, value } => (
                3,
                json!({"study_id": study, "system_attr": {key.as_str(): value}}),
            ),
            Op::CreateTrial {
                study,
                start,
                params,
                system,
            } => {
                let mut fields = json!({"study_id": study, "datetime_start": start});
                if !params.is_empty() {
                    let values = params.iter().map(|(n, v, _)| (n.clone(), float(*v)));
                    let kinds = params.iter().map(|(n, _, d)| (n.clone(), json!(d)));
                    fields["params"] = Value::Object(values.collect());
                    fields["distributions"] = Value::Object(kinds.collect());
                }
                if !system.is_empty() {
                    fields["system_attrs"] = Value::Object(system.clone());
                }
                (4, fields)
            }
            Op::Param {
                trial,
                name,
                internal,
                distribution,
            } => (
                5,
                json!({"trial_id": trial, "param_name": name,
                       "param_value_internal": float(*internal), "distribution": distribution}),
            ),
            Op::State {
                trial,
                state,
                values,
                at,
            } => (6, state_fields(*trial, *state, values.as_deref(), at)),
            Op::Intermediate { trial, step, value } => (
                7,
                json!({"trial_id": trial, "step": step, "intermediate_value": float(*value)}),
            ),
            Op::UserAttr { trial, key, value } => (
                8,
                json!({"trial_id": trial, "user_attr": {key.as_str(): value}}),
            ),
            Op::SystemAttr { trial, key, value } => (
                9,
                json!({"trial_id": trial, "system_attr": {key.as_str(): value}}),
            ),
        };
        let mut record = Map::new();
        record.insert("op_code".into(), json!(code));
        record.insert("worker_id".into(), json!(worker));
        if let Value::Object(fields) = fields {
            record.extend(fields);
        }
        Value::Object(record)
    }
}

/// Op 6's fields: `values` is required (null for none), and the datetime key follows the state.
fn state_fields(trial: usize, state: State, values: Option<&[f64]>, at: &str) -> Value {
    let values = values.map(|v| Value::Array(v.iter().map(|x| float(*x)).collect()));
    let mut fields = json!({"trial_id": trial, "state": state as u8, "values": values});
    let key = match state {
        State::Running => Some("datetime_start"),
        State::Waiting => None,
        _ => Some("datetime_complete"),
    };
    if let Some(key) = key {
        fields[key] = json!(at);
    }
    fields
}

/// Now, as Optuna 5 writes a datetime: UTC, microseconds, `+00:00`.
pub fn now() -> String {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    datetime(since.as_secs() as i64, since.subsec_micros())
}

/// `secs` since the epoch (UTC) and `micros` as `2026-11-26T21:05:08.782175+00:00`.
pub fn datetime(secs: i64, micros: u32) -> String {
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // The civil date of a day count (Howard Hinnant's days_from_civil, inverted).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s) = (rest / 3600, rest / 60 % 60, rest % 60);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{micros:06}+00:00")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::journal::json::line;

    #[test]
    fn records_are_optunas_lines() {
        let op = Op::State {
            trial: 3,
            state: State::Complete,
            values: Some(vec![0.25]),
            at: datetime(1_790_000_000, 42),
        };
        assert_eq!(
            line(&op.record("w")),
            r#"{"datetime_complete":"2026-09-21T14:13:20.000042+00:00","op_code":6,"state":1,"trial_id":3,"values":[0.25],"worker_id":"w"}"#
        );
        let op = Op::Intermediate {
            trial: 0,
            step: 2,
            value: f64::INFINITY,
        };
        assert_eq!(
            line(&op.record("w")),
            r#"{"intermediate_value":Infinity,"op_code":7,"step":2,"trial_id":0,"worker_id":"w"}"#
        );
        let waiting = Op::State {
            trial: 1,
            state: State::Waiting,
            values: None,
            at: now(),
        };
        assert_eq!(
            line(&waiting.record("w")),
            r#"{"op_code":6,"state":4,"trial_id":1,"values":null,"worker_id":"w"}"#
        );
        assert_eq!(datetime(0, 0), "1970-01-01T00:00:00.000000+00:00");
        assert_eq!(datetime(951_782_400, 7), "2000-02-29T00:00:00.000007+00:00");
    }
}
