//! A worker's next piece of work, decided from the whole study under the journal's lock:
//! 1. a trial handed back (WAITING: its worker was stopped by a signal), or one whose worker
//!    stopped beating for longer than the grace period: taken over, from its latest checkpoint
//!    where this worker can read its run directory;
//! 2. else a paused trial ASHA promotes ([`Rungs`]), or a member of a population that goes
//!    on from its interval, decided first once every member has reached it
//!    ([`Population`](super::population::Population));
//! 3. else the next new trial: the plan's next in the study's order (largest probed step first,
//!    by default; TPE's in their numbers' order), or one TPE draws from every finished trial of
//!    the study, whichever worker trained it;
//! 4. else, while trials run (other workers', or this worker's other ones), wait: one may die
//!    and need taking over, or reach a rung;
//! 5. else ASHA's paused trials are settled (the best goes on if none trained to the end, else
//!    they are pruned), and the study is done.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::joined::Study;
pub use super::origin::Origin;
use super::population::Prepare;
use super::rungs::Rungs;
use super::storage::Storage;
use crate::error::Error;
use crate::error::SweepError;
use crate::sweep::journal::attrs::{beat, BEAT, DRAWN_FROM, NUMBER, PROMOTED, WORKER};
use crate::sweep::journal::op::{now, Op, State};
use crate::sweep::journal::params::{param_ops, values_of};
use crate::sweep::journal::replay::{Journal, TrialRecord};
use crate::sweep::prune::asha;
use crate::sweep::space::Trial;

/// What a worker does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Work {
    /// Train trial `trial` (its id in the journal), from its checkpoint if it has one.
    Train {
        id: usize,
        trial: Trial,
        /// Whose trial it was.
        from: Origin,
        /// The epoch it pauses after (ASHA's next rung, a population's next interval).
        pause_at: Option<usize>,
        /// A population's member: the copy it makes before it trains, or its own run it goes
        /// on from ([`carry_out`](super::population::carry_out)).
        prepare: Option<Prepare>,
    },
    /// Other workers' trials are running: look again later.
    Wait,
    /// Every trial of the study has finished: with the trials this worker pruned as it found
    /// so (ASHA's left paused, by number, with why).
    Done(Vec<(usize, String)>),
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

/// Takes this worker's next work of `study` from `storage`: decided and claimed in one
/// transaction.
pub fn take(storage: &Mutex<Storage>, study: &Study, beats: &mut Beats) -> Result<Work, Error> {
    let mut storage = storage.lock().expect("storage");
    let origin = format!("{} in {}", study.name, storage.spec());
    let decided = storage.transact(|journal, me| match study.foreign(journal) {
        Some(message) => (Vec::new(), Err(message)),
        None => {
            let (ops, work) = next(journal, study, me, beats);
            (ops, Ok(work))
        }
    })?;
    decided.map_err(|message| Error::Sweep(SweepError::Plan { origin, message }))
}

/// The next work of `study` for `worker`, with the operations that claim it.
fn next(journal: &Journal, study: &Study, worker: &str, beats: &mut Beats) -> (Vec<Op>, Work) {
    let trials = ours(journal, study.id);
    let handed_back = |t: &TrialRecord| t.state == State::Waiting && !t.paused();
    if let Some(&(id, trial)) = trials.iter().find(|(_, t)| handed_back(t)) {
        return claim(study, worker, id, trial, Origin::HandedBack);
    }
    let running = trials.iter().filter(|(_, t)| t.state == State::Running);
    // Only the running trials' beats are watched: one that ended is let go.
    beats
        .seen
        .retain(|id, _| running.clone().any(|(t, _)| t == id));
    let mut any_running = false;
    for &(id, trial) in running {
        let owner = trial.system_attrs.get(WORKER).and_then(Value::as_str);
        // A process on this machine that has ended is known dead at once; else its silence
        // over the grace period says so.
        let ended = owner.and_then(|o| study.ended_here(journal, o));
        if let (Some(owner), Some(pid)) = (owner.filter(|&o| o != worker), ended) {
            let from = Origin::Ended(owner.to_string(), pid);
            return claim(study, worker, id, trial, from);
        }
        if owner != Some(worker) && beats.silent(id, trial, study.grace()) {
            let from = Origin::Silent(owner.unwrap_or("unknown").to_string());
            return claim(study, worker, id, trial, from);
        }
        any_running = true;
    }
    let promoted = study.rungs.as_ref().and_then(|r| r.promotable(&trials));
    if let Some(id) = promoted {
        return promote(study, worker, id, &journal.trials[&id]);
    }
    // Every trial tidemark made is numbered: the next is the study's order's next.
    let created = journal.studies[study.id].numbered;
    if let Some(population) = &study.population {
        let all = (created >= study.trials(), any_running);
        if let Some((id, decided)) = population.next(journal, study.id, &trials, all) {
            // The member as the decision leaves it: with its exploit there, if it copies.
            let mut member = journal.trials[&id].clone();
            for op in &decided {
                if let Op::SystemAttr { trial, key, value } = op {
                    if *trial == id {
                        member.system_attrs.insert(key.clone(), value.clone());
                    }
                }
            }
            let (ops, work) = go_on(study, worker, id, &member);
            // The decision stands with the claim of its first member, or not at all.
            return match ops.is_empty() {
                true => (ops, work),
                false => (decided.into_iter().chain(ops).collect(), work),
            };
        }
    }
    if created < study.trials() {
        let number = study.nth_created(created);
        return create(journal, study, worker, number, &trials);
    }
    // Trials still running (another worker's, or this one's in its children) may reach a
    // rung, or need taking over.
    if any_running {
        return (Vec::new(), Work::Wait);
    }
    // Every trial created, none running, none promotable: the paused ones are settled.
    match study.rungs.as_ref().map(|r| r.settle(&trials)) {
        Some(Ok(id)) => promote(study, worker, id, &journal.trials[&id]),
        Some(Err((ops, pruned))) => (ops, Work::Done(pruned)),
        None => (Vec::new(), Work::Done(Vec::new())),
    }
}

/// Claims trial `id` for `worker`: back to RUNNING if it waits, owned and beating.
fn claim(
    study: &Study,
    worker: &str,
    id: usize,
    trial: &TrialRecord,
    from: Origin,
) -> (Vec<Op>, Work) {
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
    // Where it pauses next: at the rung it reached if its pause there was not recorded (its
    // worker died in between), else at the next rung. A rung it was promoted from is behind
    // it: stopped mid-epoch just after, it has reported no epoch past that rung yet.
    let epochs = trial.epochs();
    let passed = (trial.system_attrs.get(PROMOTED).and_then(Value::as_u64)).unwrap_or(0) as usize;
    let pause_at =
        study
            .stops()
            .and_then(|stops| match stops.contains(&epochs) && epochs > passed {
                true => Some(epochs),
                false => asha::next_stop(stops, epochs),
            });
    only_if_trainable(ops, work(study, id, trial, from, pause_at))
}

/// Promotes paused trial `id` for `worker`: it goes on to the next rung.
fn promote(study: &Study, worker: &str, id: usize, trial: &TrialRecord) -> (Vec<Op>, Work) {
    let rung = paused_at(trial);
    resume_paused(study, worker, id, trial, Origin::Promoted(rung))
}

/// Lets paused member `id` of a population go on for `worker`, to the next interval: from the
/// checkpoint it copied at its interval, if it copied one.
fn go_on(study: &Study, worker: &str, id: usize, trial: &TrialRecord) -> (Vec<Op>, Work) {
    let epoch = paused_at(trial);
    let exploits = super::population::exploits(trial);
    let from = exploits.get(&epoch).map(|e| e.from);
    resume_paused(study, worker, id, trial, Origin::Interval(epoch, from))
}

/// The epoch paused trial `trial` waits at.
fn paused_at(trial: &TrialRecord) -> usize {
    trial.paused_at().unwrap_or(0)
}

/// Claims paused trial `id` back for `worker`: it goes on to its next stop.
fn resume_paused(
    study: &Study,
    worker: &str,
    id: usize,
    trial: &TrialRecord,
    from: Origin,
) -> (Vec<Op>, Work) {
    let at = paused_at(trial);
    let mut ops = Rungs::promote(id, at);
    ops.extend(owner(id, worker));
    let pause_at = study.stops().and_then(|stops| asha::next_stop(stops, at));
    only_if_trainable(ops, work(study, id, trial, from, pause_at))
}

/// The claim's operations with its work, or none if the trial cannot be trained here (its
/// parameters are not the study's keys): a claim that trains nothing would hold the trial.
fn only_if_trainable(ops: Vec<Op>, work: Work) -> (Vec<Op>, Work) {
    match work {
        Work::Train { .. } => (ops, work),
        other => (Vec::new(), other),
    }
}

/// The work of training trial `id`, if its parameters are the study's keys.
fn work(
    study: &Study,
    id: usize,
    record: &TrialRecord,
    from: Origin,
    pause_at: Option<usize>,
) -> Work {
    match values_of(study.vary(), &record.params) {
        Some(values) => {
            let planned = Trial {
                number: record.number.unwrap_or_default(),
                values,
            };
            // A member of a population trains with the settings of its latest exploit.
            let trial = match &study.population {
                Some(population) => population.member(record, planned),
                None => planned,
            };
            Work::Train {
                id,
                trial,
                from,
                pause_at,
                prepare: (study.population.as_ref())
                    .and_then(|_| super::population::prepare(record)),
            }
        }
        None => Work::Wait,
    }
}

/// The study's trials that tidemark made, with their ids.
pub(super) fn ours(journal: &Journal, study: usize) -> Vec<(usize, &TrialRecord)> {
    (journal.studies[study].trials.iter())
        .map(|&id| (id, &journal.trials[&id]))
        .filter(|(_, t)| t.number.is_some())
        .collect()
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

/// Creates trial `number`: its id is the journal's next (this worker holds the lock).
fn create(
    journal: &Journal,
    study: &Study,
    worker: &str,
    number: usize,
    trials: &[(usize, &TrialRecord)],
) -> (Vec<Op>, Work) {
    let id = journal.made;
    let (trial, drawn_from) = study.trial(number, &history(study, trials));
    let mut set = param_ops(id, study.vary(), &trial.values);
    let attr = |key: &str, value: Value| Op::SystemAttr {
        trial: id,
        key: key.into(),
        value,
    };
    set.push(attr(NUMBER, json!(number)));
    if let Some(from) = drawn_from {
        set.push(attr(DRAWN_FROM, json!(runs(&from))));
    }
    set.extend(owner(id, worker));
    // One record: a worker killed while appending leaves the trial whole or not at all.
    let ops = Op::create_whole(study.id, now(), set);
    (
        ops,
        Work::Train {
            id,
            trial,
            from: Origin::New,
            pause_at: study.stops().and_then(|stops| asha::next_stop(stops, 0)),
            prepare: None,
        },
    )
}

/// Sorted `numbers` as inclusive runs, `[[1, 5], [7, 9]]`: TPE's history is mostly every
/// trial before, so a draw's record stays a few numbers long, where the list itself made a
/// study's journal grow with the square of its trials (half of a 500-trial TPE journal).
fn runs(numbers: &[usize]) -> Vec<[usize; 2]> {
    let mut runs: Vec<[usize; 2]> = Vec::new();
    for &n in numbers {
        match runs.last_mut() {
            Some(run) if run[1] + 1 == n => run[1] = n,
            _ => runs.push([n, n]),
        }
    }
    runs
}

/// The study's finished trials with a value (completed, or pruned after reporting one): TPE's
/// history, by number.
fn history(study: &Study, trials: &[(usize, &TrialRecord)]) -> BTreeMap<usize, (Trial, f64)> {
    (trials.iter())
        .filter(|(_, t)| matches!(t.state, State::Complete | State::Pruned))
        .filter_map(|(_, t)| {
            let value = *t.values.as_ref()?.first()?;
            let values = values_of(study.vary(), &t.params)?;
            let number = t.number?;
            Some((number, (Trial { number, values }, value)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::runs;

    #[test]
    fn drawn_from_is_kept_as_runs_of_numbers() {
        assert_eq!(runs(&[]), Vec::<[usize; 2]>::new());
        assert_eq!(runs(&[1, 2, 3, 4]), [[1, 4]]);
        assert_eq!(runs(&[1, 2, 4, 6, 7, 9]), [[1, 2], [4, 4], [6, 7], [9, 9]]);
    }
}
