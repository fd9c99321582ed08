//! A search as a study in a journal: created by its first worker with the plan's identity (the
//! method, the varied keys' distributions, the trials), joined by the others, which must plan
//! the same search.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::rungs::Rungs;
use super::storage::Storage;
use crate::config::{ConfigError, MonitorMode};
use crate::error::Error;
use crate::sweep::journal::attrs::PLAN;
use crate::sweep::journal::op::Op;
use crate::sweep::journal::params::distribution;
use crate::sweep::prune::{asha, GateSpec};
use crate::sweep::space::{Domain, Method, PruneMethod, Space, Trial};

/// A search's study, as a worker works on it.
#[derive(Debug, Clone)]
pub struct Study {
    /// Its id in the journal.
    pub id: usize,
    /// Its name: the config's `run.name`.
    pub name: String,
    /// ASHA's rungs, where the search prunes.
    pub rungs: Option<Rungs>,
    /// The search.
    space: Space,
    /// The planned trials (TPE's past its random start are drawn as they are created).
    planned: Vec<Trial>,
}

impl Study {
    /// Joins the study `name` in `storage`, creating it if it is not there; refused if it
    /// holds another search.
    pub fn join(
        storage: &mut Storage,
        name: &str,
        space: &Space,
        epochs: usize,
    ) -> Result<Study, Error> {
        let planned = space.trials();
        let identity = identity(space, &planned);
        let origin = format!("{name} in {}", storage.spec());
        let id = storage.transact(|journal, _| match journal.study(name) {
            Some(id) => match journal.studies[id].system_attrs.get(PLAN) {
                Some(theirs) if *theirs == identity => (Vec::new(), Ok(id)),
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
                ];
                (ops, Ok(id))
            }
        })?;
        let id = id.map_err(|()| {
            Error::Config(ConfigError {
                origin,
                key: None,
                message: "the study holds another search (other trials, keys or monitor); \
                          workers of one study run one config, so give this one another \
                          run.name"
                    .into(),
            })
        })?;
        if storage.sync()?.study(name) != Some(id) {
            return Err(Error::Config(ConfigError {
                origin: format!("{name} in {}", storage.spec()),
                key: None,
                message: "the study this worker created cannot be read back from the storage"
                    .into(),
            }));
        }
        Ok(Study {
            id,
            name: name.to_string(),
            rungs: rungs_of(space, epochs),
            space: space.clone(),
            planned,
        })
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
            record: None,
            run_dir: run_dir.to_path_buf(),
            monitor: self.space.monitor.name().to_string(),
            mode: self.space.monitor.mode(),
            min_epochs: prune.min_epochs,
            startup: prune.startup,
        })
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
        if self.space.method != Method::Tpe || number <= self.space.tpe_startup() {
            return (planned, None);
        }
        let told: Vec<(&Trial, f64)> = history.values().map(|(t, v)| (t, *v)).collect();
        let drawn = self.space.tpe_trial(number, &told);
        (drawn, Some(history.keys().copied().collect()))
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

/// What makes two workers' searches one: method, seed, monitor, the keys' distributions, and
/// the planned trials.
fn identity(space: &Space, planned: &[Trial]) -> Value {
    let vary: Vec<Value> = (space.vary.iter())
        .map(|(key, domain)| json!([key, distribution(domain)]))
        .collect();
    let trials: Vec<Value> = (planned.iter()).map(|t| json!(t.describe())).collect();
    json!({
        "method": space.method,
        "seed": space.seed,
        "monitor": space.monitor.name(),
        "mode": space.monitor.mode(),
        "vary": vary,
        "prune": space.prune.map(|p| json!([p.method, p.min_epochs, p.reduction])),
        "trials": if space.method == Method::Tpe { json!(planned.len()) } else { json!(trials) },
    })
}
