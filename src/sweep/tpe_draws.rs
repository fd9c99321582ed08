//! A TPE search's draws (`method = "tpe"`), made as results arrive: a trial past the random
//! start is drawn when it first starts, from the trials finished by then (completed or pruned,
//! each with its monitored value, read from its `summary.json`), and its values are written to
//! `plan.json` at once, so that a resumed search trains the same values. Run one at a time, the
//! same seed gives the same trials; in parallel, a draw sees only the trials finished when it
//! starts, so the trials depend on timing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::plan::{write_plan, Plan, SearchPlan};
use super::space::{Liveness, Method, Space, Trial};
use crate::config::Monitor;
use crate::error::Error;
use crate::record::{RunStatus, RunSummary};

/// Draws a TPE search's trials as they start, keeping `plan.json` up to date.
pub(super) struct Draws {
    dir: PathBuf,
    plan: SearchPlan,
    space: Space,
    /// The finished trials' values seen so far (a finished trial stays finished).
    known: BTreeMap<usize, f64>,
}

impl Draws {
    /// The draws of the search in `dir` planned as `plan`, if it draws by TPE.
    pub fn of(dir: &Path, plan: &SearchPlan) -> Option<Draws> {
        let tpe = plan.tpe.as_ref()?;
        let space = Space {
            method: Method::Tpe,
            trials: plan.trials.len(),
            seed: tpe.seed,
            monitor: Monitor::new(plan.monitor.clone(), Some(plan.mode))
                .expect("a plan's monitor is checked as the plan is read"),
            vary: tpe.vary.clone(),
            order: plan.order,
            packing: plan.packing,
            prune: plan.prune,
            study: Liveness::default(),
        };
        Some(Draws {
            dir: dir.to_path_buf(),
            plan: plan.clone(),
            space,
            known: BTreeMap::new(),
        })
    }

    /// `trial` as it trains, and whether it was drawn just now: drawn if TPE draws it and it
    /// has not started before, else as planned (with the values drawn earlier).
    pub fn trial(&mut self, trial: &Trial) -> Result<(Trial, bool), Error> {
        let i = trial.number - 1;
        let tpe = self.plan.tpe.as_ref().expect("a TPE plan");
        let started = self.dir.join(trial.name()).exists();
        if trial.number <= self.space.tpe_startup() || tpe.drawn.contains(&trial.number) || started
        {
            return Ok((self.plan.trials[i].clone(), false));
        }
        self.learn()?;
        let told: Vec<(&Trial, f64)> = (self.known.iter())
            .map(|(&n, &v)| (&self.plan.trials[n - 1], v))
            .collect();
        let drawn = self.space.tpe_trial(trial.number, &told);
        self.plan.trials[i] = drawn.clone();
        let tpe = self.plan.tpe.as_mut().expect("a TPE plan");
        tpe.drawn.insert(trial.number);
        write_plan(&self.dir, &Plan::search(self.plan.clone()))?;
        Ok((drawn, true))
    }

    /// Reads the trials finished since last time (completed or pruned) with their monitored
    /// values.
    fn learn(&mut self) -> Result<(), Error> {
        for trial in &self.plan.trials {
            if self.known.contains_key(&trial.number) {
                continue;
            }
            let Some(summary) = RunSummary::read(&self.dir.join(trial.name()))? else {
                continue;
            };
            if !matches!(summary.status, RunStatus::Completed | RunStatus::Pruned) {
                continue;
            }
            if let Some(value) = summary.monitored(&self.plan.monitor) {
                self.known.insert(trial.number, value);
            }
        }
        Ok(())
    }
}
