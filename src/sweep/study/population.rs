//! Population based training across a study's workers (`method = "pbt"`): the decisions are
//! [`Rule`]'s, made under the journal's lock once every member has reached an interval, so
//! that they are the study's alone, whoever trained which member, however the workers were
//! stopped and resumed.
//!
//! A member pauses at every interval as an ASHA trial pauses at a rung (WAITING, with the
//! epoch in `tidemark:paused`). When no member runs and every one has been created, the worker
//! that finds the lowest interval undecided decides it, in the transaction that claims the
//! first member to go on: the study's `tidemark:pbt:<epoch>`, and each copier's
//! `tidemark:exploit:<epoch>`, whom it copied and the settings it goes on with. A copier's
//! worker copies the checkpoint ([`Checkpoint::copy_into`]) outside the journal's lock, then
//! records it done (`"copied": true`) before it trains; until every copier of the interval has,
//! the members copied wait at the interval, their checkpoints there. A worker stopped while it
//! copies leaves its trial running, to be taken over as any other, and the copy made again.
//! Each member then goes on from its checkpoint, resumed retuned with its settings
//! ([`Trainer::retune`](crate::Trainer::retune)).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

use serde_json::{json, Value};

use super::storage::Storage;
use crate::config::MonitorMode;
use crate::error::Error;
use crate::sweep::journal::attrs::{EXPLOIT, GENERATION, PLAN, WORKER};
use crate::sweep::journal::op::{Op, State};
use crate::sweep::journal::params::values_of;
use crate::sweep::journal::replay::{Journal, TrialRecord};
use crate::sweep::pbt::{Member, Rule};
use crate::sweep::space::{Domain, Trial};
use crate::train::Checkpoint;

/// A study's population, as its workers decide it.
#[derive(Debug, Clone)]
pub struct Population {
    /// The epochs members pause after, for the population to decide.
    pub intervals: Vec<usize>,
    pub rule: Rule,
    pub mode: MonitorMode,
    pub vary: Vec<(String, Domain)>,
    /// The search's seed, which the decisions' draws come from.
    pub seed: u64,
}

/// The next member to go on: its id, with the operations that record its interval's decision
/// where this worker made it.
pub type GoOn = (usize, Vec<Op>);

impl Population {
    /// A paused member to go on now, deciding its interval first where no worker has; `None`
    /// while the lowest interval waits for members still to be created (`all_created`),
    /// running (`any_running`) or copying.
    pub fn next(
        &self,
        journal: &Journal,
        study: usize,
        trials: &[(usize, &TrialRecord)],
        (all_created, any_running): (bool, bool),
    ) -> Option<GoOn> {
        let epoch = trials.iter().filter_map(|(_, t)| t.paused_at()).min()?;
        // The members there, by number: the first goes on first.
        let mut there: Vec<(usize, usize, &TrialRecord)> = (trials.iter())
            .filter(|(_, t)| t.paused_at() == Some(epoch))
            .filter_map(|&(id, t)| Some((t.number?, id, t)))
            .collect();
        there.sort_unstable_by_key(|&(n, ..)| n);
        let first = there[0].1;
        let key = format!("{GENERATION}{epoch}");
        if journal.studies[study].system_attrs.contains_key(&key) {
            // The members still to copy go on first; the members they copy wait for them.
            let copying: Vec<(usize, usize)> = (trials.iter())
                .filter(|(_, t)| !t.state.finished())
                .filter_map(|(_, t)| pending(t).filter(|p| p.epoch == epoch))
                .map(|p| (p.member, p.from))
                .collect();
            let next = (there.iter())
                .filter(|(n, ..)| !copying.iter().any(|&(_, from)| from == *n))
                .min_by_key(|(n, ..)| (!copying.iter().any(|&(m, _)| m == *n), *n));
            return next.map(|&(_, id, _)| (id, Vec::new()));
        }
        if !all_created || any_running {
            return None;
        }
        let members: Vec<Member> = (there.iter())
            .map(|&(number, _, t)| Member {
                number,
                value: (t.intermediate.get(&(epoch as i64)).copied()).unwrap_or(f64::NAN),
                values: self.values(t, values_of(&self.vary, &t.params).unwrap_or_default()),
            })
            .collect();
        let exploits = self
            .rule
            .decide(&members, &self.vary, self.mode, self.seed, epoch);
        let ids: BTreeMap<usize, usize> = there.iter().map(|&(n, id, _)| (n, id)).collect();
        let mut ops = Vec::new();
        for exploit in &exploits {
            let values: serde_json::Map<String, Value> = (exploit.values.iter())
                .map(|(k, v)| (k.clone(), json(v)))
                .collect();
            ops.push(Op::SystemAttr {
                trial: ids[&exploit.member],
                key: format!("{EXPLOIT}{epoch}"),
                value: json!({"from": exploit.from, "values": values}),
            });
        }
        let pairs: Vec<[usize; 2]> = exploits.iter().map(|e| [e.member, e.from]).collect();
        ops.push(Op::StudySystemAttr {
            study,
            key,
            value: json!({ "exploits": pairs }),
        });
        // A copier first: the members it copies wait for its copy.
        let first = exploits.first().map_or(first, |e| ids[&e.member]);
        Some((first, ops))
    }

    /// The settings member `t` trains with now: those of its latest exploit, else its own
    /// (`own`, its parameters).
    pub fn values(
        &self,
        t: &TrialRecord,
        own: BTreeMap<String, toml::Value>,
    ) -> BTreeMap<String, toml::Value> {
        exploits(t)
            .into_values()
            .next_back()
            .map_or(own, |e| e.values)
    }

    /// Member `trial` with the settings it trains with now.
    pub fn member(&self, t: &TrialRecord, trial: Trial) -> Trial {
        Trial {
            values: self.values(t, trial.values.clone()),
            ..trial
        }
    }
}

/// A member's exploit at an interval, as its `tidemark:exploit:<epoch>` records it.
#[derive(Debug, Clone, PartialEq)]
pub struct Exploited {
    /// The member it copied.
    pub from: usize,
    /// The settings it went on with.
    pub values: BTreeMap<String, toml::Value>,
    /// Whether the copy is made.
    pub copied: bool,
}

/// `t`'s exploits, by epoch.
pub fn exploits(t: &TrialRecord) -> BTreeMap<usize, Exploited> {
    (t.system_attrs.iter())
        .filter_map(|(key, value)| {
            let epoch = key.strip_prefix(EXPLOIT)?.parse().ok()?;
            let exploited = Exploited {
                from: value["from"].as_u64()? as usize,
                values: serde_json::from_value(value["values"].clone()).ok()?,
                copied: value["copied"] == json!(true),
            };
            Some((epoch, exploited))
        })
        .collect()
}

/// Every exploit `study`'s journal records is one its decisions could have made, or the error
/// that says which is not (its member's number, its key and field): of a member of the
/// population other than its own, at one of its intervals, going on with the keys the search
/// varies, and no other. Read before a row, a lineage, a schedule or a decision is made from
/// them: a record that is not is never dropped, and never trusted. The error names the
/// journal at `spec`.
pub fn check_exploits(journal: &Journal, study: usize, spec: &str) -> Result<(), Error> {
    let Some(plan) = journal.studies[study].system_attrs.get(PLAN) else {
        return Ok(());
    };
    let Some(interval) = plan["pbt"]["interval"].as_u64().filter(|&i| i > 0) else {
        return Ok(());
    };
    let population = plan["trials"].as_array().map_or(0, Vec::len);
    let mut varied: Vec<&str> = (plan["vary"].as_array().into_iter().flatten())
        .filter_map(|kd| kd[0].as_str())
        .collect();
    varied.sort_unstable();
    for &id in &journal.studies[study].trials {
        let t = &journal.trials[&id];
        let number = t
            .number
            .map_or_else(|| format!("trial id {id}"), Trial::name_of);
        for (key, value) in &t.system_attrs {
            let Some(epoch) = key.strip_prefix(EXPLOIT) else {
                continue;
            };
            let bad = |what: String| {
                Err(Error::Sweep(crate::error::SweepError::Plan {
                    origin: spec.to_string(),
                    message: format!("{number}'s {key}: {what}"),
                }))
            };
            match epoch.parse::<u64>() {
                Ok(e) if e > 0 && e % interval == 0 => {}
                _ => return bad(format!("not an interval's epoch (every {interval})")),
            }
            let from = value["from"].as_u64();
            match from {
                Some(f) if (1..=population as u64).contains(&f) && Some(f as usize) != t.number => {
                }
                _ => {
                    return bad(format!(
                        "from is {}, not another member of the population of {population}",
                        value["from"]
                    ))
                }
            }
            let Value::Object(values) = &value["values"] else {
                return bad(format!(
                    "values is {}, not a table of settings",
                    value["values"]
                ));
            };
            let set: Vec<&str> = values.keys().map(String::as_str).collect();
            if set != varied {
                let set = match set.is_empty() {
                    true => "no key".to_string(),
                    false => set.join(", "),
                };
                let expected = varied.join(", ");
                return bad(format!(
                    "values sets {set}, where the search varies {expected}"
                ));
            }
            if let Err(e) =
                serde_json::from_value::<BTreeMap<String, toml::Value>>(value["values"].clone())
            {
                return bad(format!("values: {e}"));
            }
        }
    }
    Ok(())
}

/// A TOML value as the journal's JSON.
fn json(value: &toml::Value) -> Value {
    serde_json::to_value(value).expect("a TOML value is JSON")
}

/// A member's copy still to make: its exploit at `epoch`, not yet recorded as copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pending {
    /// The member that copies, by number.
    pub member: usize,
    /// The member it copies.
    pub from: usize,
    /// The interval's epoch: the checkpoint after it.
    pub epoch: usize,
}

/// What a member needs before it trains on: the copy its exploit makes, or its own run to go
/// on from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prepare {
    /// Its exploit's copy, not yet made.
    Copy(Pending),
    /// Its own run, in this worker's sweep directory: a member that trained before goes on
    /// from its checkpoint, never from the start.
    Own(usize),
}

/// `t`'s copy still to make, if its latest exploit is not recorded as copied.
pub fn pending(t: &TrialRecord) -> Option<Pending> {
    let (epoch, latest) = exploits(t).into_iter().next_back()?;
    (!latest.copied).then_some(Pending {
        member: t.number?,
        from: latest.from,
        epoch,
    })
}

/// What member `t` needs before it trains on, if anything.
pub fn prepare(t: &TrialRecord) -> Option<Prepare> {
    match pending(t) {
        Some(pending) => Some(Prepare::Copy(pending)),
        None => (t.epochs() > 0).then(|| Prepare::Own(t.number.unwrap_or_default())),
    }
}

/// Carries out `prepare` for trial `id` in the sweep directory `dir`: makes its copy and
/// records it copied while the trial is this worker's (one taken over meanwhile is its new
/// worker's to copy), or finds its own run.
pub fn carry_out(
    storage: &Mutex<Storage>,
    id: usize,
    prepare: Prepare,
    dir: &Path,
) -> Result<(), Error> {
    let pending = match prepare {
        Prepare::Own(member) => return run_of(dir, member, member).map(drop),
        Prepare::Copy(pending) => pending,
    };
    copy(dir, pending.from, pending.member, pending.epoch)?;
    crate::failpoint::pass("copied");
    let key = format!("{EXPLOIT}{}", pending.epoch);
    let mut storage = storage.lock().expect("storage");
    storage.transact(|journal, me| {
        let ours = (journal.trials.get(&id))
            .filter(|t| t.state == State::Running)
            .and_then(|t| Some((t.system_attrs.get(WORKER)?.as_str()? == me, t)));
        match ours {
            Some((true, t)) => {
                let mut value = t.system_attrs[&key].clone();
                value["copied"] = json!(true);
                let op = Op::SystemAttr {
                    trial: id,
                    key: key.clone(),
                    value,
                };
                (vec![op], ())
            }
            _ => (Vec::new(), ()),
        }
    })
}

/// Member `member`'s run directory in the sweep directory `dir`, for `user` (the member that
/// goes on from it), or the error that this worker cannot read it.
fn run_of(dir: &Path, member: usize, user: usize) -> Result<std::path::PathBuf, Error> {
    let name = Trial::name_of;
    let run = dir.join(name(member));
    crate::record::names::inside(dir, &run).map_err(|why| {
        let message = format!("{why}; nothing was read or changed");
        Error::Sweep(crate::error::SweepError::Plan {
            origin: run.display().to_string(),
            message,
        })
    })?;
    match run
        .join("checkpoints")
        .join("latest")
        .symlink_metadata()
        .is_ok()
    {
        true => Ok(run),
        false => Err(Error::Sweep(crate::error::SweepError::Plan {
            origin: run.display().to_string(),
            message: format!(
                "{} goes on from {}, which this worker cannot read here: the workers of a \
                 population share one sweep directory (the same --out)",
                name(user),
                match member == user {
                    true => "its own checkpoint".to_string(),
                    false => format!("{}'s checkpoint", name(member)),
                }
            ),
        })),
    }
}

/// Copies member `from`'s checkpoint at `epoch` into member `to`'s run, in the sweep directory
/// `dir`, as `to`'s latest.
fn copy(dir: &Path, from: usize, to: usize, epoch: usize) -> Result<(), Error> {
    let name = Trial::name_of;
    // The member's own run too: a copy into a directory where it never trained would make a
    // run of a checkpoint alone.
    let target = run_of(dir, to, to)?;
    let source = run_of(dir, from, to)?;
    let checkpoint = Checkpoint::latest(&source)?;
    if checkpoint.state.epoch != epoch || checkpoint.state.step_in_epoch != 0 {
        let message = format!(
            "population based training copies {}'s checkpoint after epoch {epoch} into {}, \
             but its latest is another ({})",
            name(from),
            name(to),
            checkpoint.describe()
        );
        return Err(Error::checkpoint(&checkpoint.dir, message));
    }
    checkpoint.copy_into(&target)?;
    Ok(())
}
