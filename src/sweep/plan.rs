//! `plan.json`: what a sweep directory is to train, written when the sweep starts (and as TPE
//! draws), read back by `--resume`, and checked as it is read.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::SearchPlan;
use crate::config::ConfigError;
use crate::error::Error;
use crate::record::write_atomic;

/// `plan.json` in a sweep's directory: how many runs it is to make, or a search's trials
/// (its base config is `config.toml` beside it).
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
    let bytes = std::fs::read(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::Config(ConfigError {
            origin: format!("--resume {}", dir.display()),
            key: None,
            message: format!("not a sweep directory: {} is missing", path.display()),
        }),
        _ => Error::io(&path, e),
    })?;
    let plan = crate::record::parse_json::<Plan>(&bytes)
        .map_err(|e| Error::checkpoint(&path, format!("not a sweep plan: {e}")))?;
    if let Some(search) = &plan.search {
        check(search, &path)?;
    }
    Ok(plan)
}

/// What a search takes for granted in its plan, and a hand-edited one may break: trials
/// numbered 1, 2, ... in order, and TPE's domains as `[sweep.vary]` checks them. The error
/// names `path`, the field and the value.
fn check(plan: &SearchPlan, path: &Path) -> Result<(), Error> {
    let refused = |what: String| Error::checkpoint(path, format!("not a sweep plan: {what}"));
    if let Some((i, trial)) = (plan.trials.iter().enumerate()).find(|(i, t)| t.number != i + 1) {
        return Err(refused(format!(
            "trials[{i}].number is {}, where the plan's trials are numbered 1, 2, ... in order",
            trial.number
        )));
    }
    for (key, domain) in plan.tpe.iter().flat_map(|tpe| &tpe.vary) {
        domain
            .check()
            .map_err(|e| refused(format!("tpe.vary {key}: {e}")))?;
    }
    Ok(())
}

pub(super) fn write_plan(dir: &Path, plan: &Plan) -> Result<(), Error> {
    let path = dir.join("plan.json");
    let json = serde_json::to_vec_pretty(plan).expect("a plan serialises");
    write_atomic(&path, &json).map_err(|e| Error::io(&path, e))
}
