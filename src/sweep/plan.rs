//! A search's plan ([`SearchPlan`]): what it trains, as its journal keeps it (the study's
//! `tidemark:search`, which a resume and a report go on from) and `plan.json` shows it, checked
//! as it is read. `plan.json` is read back only for a study whose journal an earlier tidemark
//! wrote without the plan.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::space::{
    repeats, Domain, Method, Order, Packing, PruneConfig, Space, Trial, MAX_TRIALS,
};

use crate::config::{Monitor, MonitorMode};
use crate::error::{Error, UsageError};
use crate::record::write_atomic;

/// What a search plans, in `plan.json`: resuming trains the same trials.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SearchPlan {
    /// The metric the trials are ranked by.
    pub monitor: String,
    /// Whether lower or higher is better.
    pub mode: MonitorMode,
    /// The trials, in order.
    pub trials: Vec<Trial>,
    /// The order a process trains its trials in.
    #[serde(default)]
    pub order: Order,
    /// Trials at once, and the memory they may hold together.
    #[serde(default)]
    pub packing: Packing,
    /// The pruner, if any.
    #[serde(default)]
    pub prune: Option<PruneConfig>,
    /// With `method = "tpe"`: what draws the trials past the random start, as they start.
    #[serde(default)]
    pub tpe: Option<TpePlan>,
    /// The keys varied, with what each takes (for the search's journal; empty in a plan
    /// written before it was kept, whose search writes no journal).
    #[serde(default)]
    pub vary: Vec<(String, Domain)>,
    /// Grid, random or TPE, and the draws' seed (absent in a plan written before they were
    /// kept): with the rest, the search's table, which a resume rejoins its study with.
    #[serde(default)]
    pub method: Option<Method>,
    /// The random draws' seed.
    #[serde(default)]
    pub seed: Option<u64>,
    /// With `method = "pbt"`: the population's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pbt: Option<crate::sweep::space::Pbt>,
}

impl SearchPlan {
    /// Whether the search is a sweep of runs (`sweep --runs N`, [`Space::repeats`]).
    pub fn is_repeat(&self) -> bool {
        self.method
            .is_some_and(|method| repeats(method, &self.vary))
    }

    /// The search this plan was made from, where it keeps its method and seed.
    pub fn space(&self) -> Option<Space> {
        Some(Space {
            method: self.method?,
            trials: self.trials.len(),
            seed: self.seed?,
            monitor: crate::config::Monitor::new(&self.monitor, Some(self.mode)).ok()?,
            vary: self.vary.clone(),
            order: self.order,
            packing: self.packing,
            prune: self.prune,
            study: Default::default(),
            pbt: self.pbt.clone(),
        })
    }
}

/// What a TPE search keeps in its plan to draw the rest of its trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TpePlan {
    /// The random draws' seed.
    pub seed: u64,
    /// The keys varied, with what each takes.
    pub vary: Vec<(String, Domain)>,
    /// The trials drawn so far by TPE (past the random start), by number.
    #[serde(default)]
    pub drawn: BTreeSet<usize>,
}

impl TpePlan {
    /// The TPE part of `space`'s plan, if it draws by TPE.
    pub fn of(space: &Space) -> Option<TpePlan> {
        space.draws_from_results().then(|| TpePlan {
            seed: space.seed,
            vary: space.vary.clone(),
            drawn: BTreeSet::new(),
        })
    }
}

/// `plan.json` in a sweep's directory: a search's trials (its base config is `config.toml`
/// beside it). A sweep of runs written before `--runs` was a search kept only their count.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Plan {
    pub(super) runs: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) search: Option<SearchPlan>,
}

impl Plan {
    pub(super) fn search(plan: SearchPlan) -> Self {
        Plan {
            runs: plan.trials.len(),
            search: Some(plan),
        }
    }
}

pub(super) fn read_plan(dir: &Path) -> Result<Plan, Error> {
    let path = dir.join("plan.json");
    crate::record::names::inside(dir, &path)
        .map_err(|why| Error::checkpoint(&path, format!("{why}; nothing was read or changed")))?;
    let bytes = std::fs::read(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::Usage(UsageError::new(
            format!("--resume {}", dir.display()),
            format!("not a sweep directory: {} is missing", path.display()),
        )),
        _ => Error::io(&path, e),
    })?;
    let plan = crate::record::parse_json::<Plan>(&bytes)
        .map_err(|e| Error::checkpoint(&path, format!("not a sweep plan: {e}")))?;
    if let Some(search) = &plan.search {
        check(search, &path, "not a sweep plan")?;
    }
    Ok(plan)
}

/// What a search takes for granted in its plan, and a hand-edited one may break: trials
/// numbered 1, 2, ... in order, and TPE's domains as `[sweep.vary]` checks them. The error
/// names `path`, then `what` the plan is there, the field and the value.
pub(super) fn check(plan: &SearchPlan, path: &Path, what: &str) -> Result<(), Error> {
    let refused = |why: String| Error::checkpoint(path, format!("{what}: {why}"));
    if let Some((i, trial)) = (plan.trials.iter().enumerate()).find(|(i, t)| t.number != i + 1) {
        return Err(refused(format!(
            "trials[{i}].number is {}, where the plan's trials are numbered 1, 2, ... in order",
            trial.number
        )));
    }
    if let Err(e) = Monitor::new(plan.monitor.clone(), Some(plan.mode)) {
        return Err(refused(format!("monitor: {}", e.0)));
    }
    for (key, domain) in plan.tpe.iter().flat_map(|tpe| &tpe.vary) {
        domain
            .check()
            .map_err(|e| refused(format!("tpe.vary {key}: {e}")))?;
    }
    if plan.trials.len() > MAX_TRIALS {
        let n = plan.trials.len();
        return Err(refused(format!(
            "trials: {n}, more than the {MAX_TRIALS} a search runs"
        )));
    }
    for (key, domain) in &plan.vary {
        domain
            .check()
            .map_err(|e| refused(format!("vary {key}: {e}")))?;
        let range = matches!(domain, Domain::Range { .. });
        if range && plan.method == Some(Method::Grid) {
            let message = format!("vary {key}: a range, and method \"grid\" takes lists");
            return Err(refused(message));
        }
    }
    // Each trial sets the keys the search varies, and no other: its values become its config.
    if !plan.vary.is_empty() {
        let keys: BTreeSet<&str> = plan.vary.iter().map(|(k, _)| k.as_str()).collect();
        for (i, trial) in plan.trials.iter().enumerate() {
            let set: BTreeSet<&str> = trial.values.keys().map(String::as_str).collect();
            if let Some(key) = set.symmetric_difference(&keys).next() {
                let why = match set.contains(key) {
                    true => "which the search does not vary",
                    false => "missing, and the search varies it",
                };
                return Err(refused(format!("trials[{i}].values: {key} is {why}")));
            }
        }
    }
    // A population's settings go with its method, and are what its decisions take for granted.
    let method = plan
        .method
        .map(|m| serde_json::to_string(&m).expect("a method serialises"));
    match (&plan.pbt, plan.method) {
        (Some(pbt), Some(Method::Pbt)) => {
            // Its key as the plan names it: `pbt.quantile`, not `sweep.pbt.quantile`.
            pbt.check()
                .map_err(|e| refused(e.message.trim_start_matches("sweep.").to_string()))?;
            if pbt.population != plan.trials.len() {
                return Err(refused(format!(
                    "pbt.population is {}, and the plan has {} trials: its members",
                    pbt.population,
                    plan.trials.len()
                )));
            }
            if plan.prune.is_some() {
                return Err(refused("prune: a population prunes no member".into()));
            }
        }
        (None, Some(Method::Pbt)) => {
            return Err(refused(
                "method is \"pbt\", and there is no pbt: its settings".into(),
            ))
        }
        (Some(_), _) => {
            let method = method.unwrap_or_else(|| "missing".into());
            return Err(refused(format!(
                "method is {method}, and pbt, a population's settings, goes with \"pbt\" alone"
            )));
        }
        (None, _) => {}
    }
    Ok(())
}

pub(super) fn write_plan(dir: &Path, plan: &Plan) -> Result<(), Error> {
    let path = dir.join("plan.json");
    let json = serde_json::to_vec_pretty(plan).expect("a plan serialises");
    write_atomic(&path, &json).map_err(|e| Error::io(&path, e))
}
