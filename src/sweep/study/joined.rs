//! A search as a study in a journal: created by its first worker with the plan's identity (the
//! method, the varied keys' distributions, the trials), joined by the others, which must plan
//! the same search.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::population::Population;
use super::rungs::Rungs;
use super::storage::Storage;
use crate::config::MonitorMode;
use crate::error::{Error, SweepError};
use crate::sweep::journal::attrs::{ORDER, PLAN, PROCESS_OF, RETRY_OF, SEARCH};
use crate::sweep::journal::op::Op;
use crate::sweep::journal::params::{distribution, values_of};
use crate::sweep::journal::replay::{Journal, Keep};
use crate::sweep::journal::worker_id::{ended, process_space};
use crate::sweep::pbt::Rule;
use crate::sweep::plan::SearchPlan;
use crate::sweep::prune::{asha, GateSpec};
use crate::sweep::space::{Domain, Order, PruneMethod, Space, Trial};

/// A search's study, as a worker works on it.
#[derive(Debug, Clone)]
pub struct Study {
    /// Its id in the journal.
    pub id: usize,
    /// Its name: the config's `run.name`.
    pub name: String,
    /// ASHA's rungs, where the search prunes.
    pub rungs: Option<Rungs>,
    /// Population based training's population (`method = "pbt"`).
    pub population: Option<Population>,
    /// The search.
    space: Space,
    /// The planned trials (TPE's past its random start are drawn as they are created; a
    /// population's members as drawn first).
    planned: Vec<Trial>,
    /// Their numbers in the order they are created (the study's [`ORDER`]).
    order: Vec<usize>,
    /// Where this worker's process runs ([`process_space`]).
    here: Option<String>,
}

impl Study {
    /// Joins the study `name` in `storage`, creating it if it is not there; refused if it
    /// holds another search.
    pub fn join(
        storage: &mut Storage,
        name: &str,
        (space, plan): (&Space, &SearchPlan),
        epochs: usize,
    ) -> Result<Study, Error> {
        let planned = space.trials();
        let identity = identity(space, &planned);
        let origin = format!("{name} in {}", storage.spec());
        let here = process_space();
        let process = |id: usize, worker: &str| Op::StudySystemAttr {
            study: id,
            key: format!("{PROCESS_OF}{worker}"),
            value: json!({"space": here, "pid": std::process::id()}),
        };
        let id = storage.transact(|journal, worker| match journal.study(name) {
            Some(id) => match journal.studies[id].system_attrs.get(PLAN) {
                Some(theirs) if *theirs == identity => (vec![process(id, worker)], Ok(id)),
                _ => (Vec::new(), Err(())),
            },
            None => {
                let id = journal.studies.len();
                let direction = match space.monitor.mode() {
                    MonitorMode::Min => 1,
                    MonitorMode::Max => 2,
                };
                let ops = vec![
                    Op::CreateStudy {
                        name: name.to_string(),
                        directions: vec![direction],
                    },
                    Op::StudySystemAttr {
                        study: id,
                        key: PLAN.into(),
                        value: identity.clone(),
                    },
                    search_record(id, plan),
                    process(id, worker),
                ];
                (ops, Ok(id))
            }
        })?;
        let id = id.map_err(|()| {
            Error::Sweep(SweepError::Plan {
                origin: origin.clone(),
                message: "the study holds another search (other trials, keys or monitor); \
                          workers of one study run one config, so give this one another \
                          run.name"
                    .into(),
            })
        })?;
        if storage.sync()?.study(name) != Some(id) {
            return Err(Error::Sweep(SweepError::Storage {
                storage: storage.spec().to_string(),
                message: format!("study {name}, which this worker created, cannot be read back"),
            }));
        }
        // A population's decisions go on from those recorded: each must be one it could make.
        let spec = storage.spec().to_string();
        super::population::check_exploits(storage.sync()?, id, &spec)?;
        let order = (1..=planned.len()).collect();
        let study = Study {
            id,
            name: name.to_string(),
            rungs: rungs_of(space, epochs),
            population: space.pbt.as_ref().map(|pbt| Population {
                intervals: pbt.intervals(epochs),
                rule: Rule::of(pbt),
                mode: space.monitor.mode(),
                vary: space.vary.clone(),
                seed: space.seed,
            }),
            space: space.clone(),
            planned,
            order,
            here,
        };
        // Every trial already there is one this study's workers made.
        match study.foreign(storage.sync()?) {
            Some(message) => Err(Error::Sweep(SweepError::Plan { origin, message })),
            None => Ok(study),
        }
    }

    /// Why the study's trials in `journal` are not all ones its workers made, if they are not: a
    /// number outside the plan, a number made twice (but for a retry), or an unfinished trial
    /// whose parameters are not the study's keys. A worker decides nothing from such a journal:
    /// it would train what the plan does not hold, or wait for a trial it can never take over.
    pub fn foreign(&self, journal: &Journal) -> Option<String> {
        let mut made = std::collections::BTreeSet::new();
        let trials = journal.studies[self.id].trials.iter();
        let numbered = trials.filter_map(|id| Some((*id, journal.trials.get(id)?)));
        for (id, trial) in numbered.filter(|(_, t)| t.number.is_some()) {
            let number = trial.number.unwrap_or_default();
            let retry = trial.system_attrs.contains_key(RETRY_OF);
            let why = if !(1..=self.trials()).contains(&number) {
                format!(
                    "is numbered {number}, not one of the plan's 1 to {}",
                    self.trials()
                )
            } else if !retry && !made.insert(number) {
                format!("is numbered {number}, which an earlier trial has")
            } else if !trial.state.finished() && values_of(self.vary(), &trial.params).is_none() {
                let keys: Vec<&String> = trial.params.keys().collect();
                format!("has the parameters {keys:?}, not the study's keys")
            } else {
                continue;
            };
            return Some(format!(
                "the journal's trial {id} {why}: no worker of this study made it; nothing is \
                 decided from a journal edited so"
            ));
        }
        None
    }

    /// The pid of `worker`'s process where it has ended on this machine (in this PID
    /// namespace, since this boot), as `journal` records where it ran; `None` where it may
    /// live, or ran elsewhere.
    pub fn ended_here(&self, journal: &Journal, worker: &str) -> Option<u32> {
        let attrs = &journal.studies[self.id].system_attrs;
        let process = attrs.get(&format!("{PROCESS_OF}{worker}"))?;
        let here = self.here.as_deref()?;
        let pid = u32::try_from(process["pid"].as_u64()?).ok()?;
        (process["space"].as_str() == Some(here) && ended(pid)).then_some(pid)
    }

    /// Settles the order the study's trials are created in: the one its first worker recorded;
    /// else, with `order = "largest_first"` (but for TPE, which draws in its numbers' order),
    /// the numbers `arrange` gives the planned trials in (largest probed step first), recorded
    /// unless another worker recorded its own meanwhile, which is then taken.
    pub fn settle_order(
        &mut self,
        storage: &mut Storage,
        arrange: impl FnOnce(&[Trial]) -> Result<Vec<usize>, Error>,
    ) -> Result<(), Error> {
        let origin = format!("{} in {}", self.name, storage.spec());
        let n = self.planned.len();
        if let Some(order) = recorded(storage.sync()?, self.id, n, &origin) {
            self.order = order?;
            return Ok(());
        }
        if self.space.order == Order::Listed || self.space.draws_from_results() {
            return Ok(());
        }
        let mine = arrange(&self.planned)?;
        let id = self.id;
        let order = storage.transact(|journal, _| match recorded(journal, id, n, &origin) {
            Some(theirs) => (Vec::new(), theirs),
            None => {
                let op = Op::StudySystemAttr {
                    study: id,
                    key: ORDER.into(),
                    value: json!(mine),
                };
                (vec![op], Ok(mine.clone()))
            }
        })?;
        self.order = order?;
        Ok(())
    }

    /// Planned trial `number`, as the plan has it (TPE's past its random start are drawn
    /// otherwise).
    pub fn planned(&self, number: usize) -> Option<&Trial> {
        self.planned.get(number.checked_sub(1)?)
    }

    /// The number of the trial created after `created` others.
    pub fn nth_created(&self, created: usize) -> usize {
        self.order[created]
    }

    /// The trials it trains.
    pub fn trials(&self) -> usize {
        self.planned.len()
    }

    /// The keys varied, with their domains.
    pub fn vary(&self) -> &[(String, Domain)] {
        &self.space.vary
    }

    /// How often a worker beats for its trial.
    pub fn heartbeat(&self) -> Duration {
        self.space.study.heartbeat
    }

    /// The gate of a trial's run in `run_dir`: a pause at `pause_at` (ASHA's next rung), or
    /// the median rule, which reads the study's record from the trial's process (a
    /// [`ReadRecord`](crate::sweep::prune::ReadRecord)).
    pub fn gate(&self, pause_at: Option<usize>, run_dir: &Path) -> Option<GateSpec> {
        if let Some(epoch) = pause_at {
            return Some(GateSpec::PauseAt { epoch });
        }
        let prune = self
            .space
            .prune
            .filter(|p| p.method == PruneMethod::Median)?;
        Some(GateSpec::Median {
            run_dir: run_dir.to_path_buf(),
            monitor: self.space.monitor.name().to_string(),
            mode: self.space.monitor.mode(),
            min_epochs: prune.min_epochs,
            startup: prune.startup,
        })
    }

    /// The epochs a trial pauses after: ASHA's rungs, or the population's intervals.
    pub fn stops(&self) -> Option<&[usize]> {
        match (&self.rungs, &self.population) {
            (Some(rungs), _) => Some(&rungs.rungs),
            (None, Some(population)) => Some(&population.intervals),
            (None, None) => None,
        }
    }

    /// How long a trial's heartbeat may stay silent before another worker takes it over.
    pub fn grace(&self) -> Duration {
        self.space.study.grace
    }

    /// Trial `number`'s values: planned, or drawn by TPE from `history` (finished trials with
    /// their values, by number); with the numbers it was drawn from.
    pub fn trial(
        &self,
        number: usize,
        history: &BTreeMap<usize, (Trial, f64)>,
    ) -> (Trial, Option<Vec<usize>>) {
        let planned = self.planned[number - 1].clone();
        if !self.space.draws_from_results() || number <= self.space.tpe_startup() {
            return (planned, None);
        }
        let told: Vec<(&Trial, f64)> = history.values().map(|(t, v)| (t, *v)).collect();
        let drawn = self.space.tpe_trial(number, &told);
        (drawn, Some(history.keys().copied().collect()))
    }
}

/// The creation order recorded in study `id` of `journal` (`origin`, for an error) for its `n`
/// trials, if one is: every number from 1 to `n` once, or why not.
fn recorded(
    journal: &Journal,
    id: usize,
    n: usize,
    origin: &str,
) -> Option<Result<Vec<usize>, SweepError>> {
    let value = journal.studies[id].system_attrs.get(ORDER)?;
    let order: Option<Vec<usize>> =
        (value.as_array()).and_then(|a| a.iter().map(|v| v.as_u64().map(|n| n as usize)).collect());
    let whole = |o: &Vec<usize>| {
        let mut sorted = o.clone();
        sorted.sort_unstable();
        sorted == (1..=n).collect::<Vec<usize>>()
    };
    Some(match order {
        Some(order) if whole(&order) => Ok(order),
        _ => Err(SweepError::Plan {
            origin: origin.to_string(),
            message: format!(
                "its {ORDER} is not every trial number from 1 to {n} once: `{}`",
                crate::config::clipped(&value.to_string(), 80)
            ),
        }),
    })
}

/// What a worker's journal keeps of a finished trial of `space`'s study: its curve for a
/// pruner (ASHA ranks it at its rungs, the median rule at its epochs), its parameters for TPE.
pub fn keep(space: &Space) -> Keep {
    Keep {
        curves: space.prune.is_some() || space.pbt.is_some(),
        params: space.draws_from_results(),
    }
}

/// ASHA's rungs for trials of `epochs` epochs, if the search prunes with ASHA.
fn rungs_of(space: &Space, epochs: usize) -> Option<Rungs> {
    let prune = space.prune.filter(|p| p.method == PruneMethod::Asha)?;
    Some(Rungs {
        rungs: asha::rungs(prune.min_epochs, prune.reduction, epochs),
        reduction: prune.reduction,
        mode: space.monitor.mode(),
        monitor: space.monitor.name().to_string(),
    })
}

/// The record of `plan` as study `id`'s search ([`SEARCH`]), as `plan.json` shows it.
pub fn search_record(id: usize, plan: &SearchPlan) -> Op {
    Op::StudySystemAttr {
        study: id,
        key: SEARCH.into(),
        value: serde_json::to_value(plan).expect("a plan serialises"),
    }
}

/// What makes two workers' searches one: method, seed, monitor, the keys' distributions, and
/// the planned trials.
fn identity(space: &Space, planned: &[Trial]) -> Value {
    let vary: Vec<Value> = (space.vary.iter())
        .map(|(key, domain)| json!([key, distribution(domain)]))
        .collect();
    let trials: Vec<Value> = (planned.iter()).map(|t| json!(t.describe())).collect();
    let mut identity = json!({
        "method": space.method,
        "seed": space.seed,
        "monitor": space.monitor.name(),
        "mode": space.monitor.mode(),
        "vary": vary,
        "prune": space.prune.map(|p| json!([p.method, p.min_epochs, p.reduction])),
        "trials": if space.draws_from_results() { json!(planned.len()) } else { json!(trials) },
    });
    // Only where there is one, so that a study made before population based training keeps
    // its identity.
    if let Some(pbt) = &space.pbt {
        identity["pbt"] = json!(pbt);
    }
    identity
}

#[cfg(test)]
mod tests {
    use super::{recorded, Journal, ORDER};
    use crate::sweep::journal::replay::StudyRecord;
    use serde_json::json;

    fn with_order(value: serde_json::Value) -> Journal {
        let mut study = StudyRecord::default();
        study.system_attrs.insert(ORDER.into(), value);
        let mut journal = Journal::default();
        journal.studies.push(study);
        journal
    }

    #[test]
    fn a_recorded_order_is_every_number_once_or_refused_saying_so() {
        assert_eq!(
            recorded(&with_order(json!(null)), 0, 3, "s").map(|r| r.is_err()),
            Some(true)
        );
        let mut none = Journal::default();
        none.studies.push(StudyRecord::default());
        assert_eq!(recorded(&none, 0, 3, "s"), None);
        assert_eq!(
            recorded(&with_order(json!([3, 1, 2])), 0, 3, "s"),
            Some(Ok(vec![3, 1, 2]))
        );
        for bad in [
            json!([3, 1, 1]),
            json!([1, 2]),
            json!([1, 2, 4]),
            json!("1,2,3"),
        ] {
            let refused = recorded(&with_order(bad.clone()), 0, 3, "s")
                .unwrap()
                .unwrap_err()
                .to_string();
            assert!(
                refused.starts_with("s: its tidemark:order is not every trial number from 1 to 3"),
                "{bad}: {refused}"
            );
            assert!(refused.ends_with(&format!("`{bad}`")), "{refused}");
        }
    }
}
