//! Pruning a search's trials (`[sweep.prune]`): ASHA pauses each trial at its rungs and
//! promotes the best later ([`asha`]); the median rule stops a trial that is behind the
//! completed trials' median at the same epoch ([`median`]). The decisions are pure; the
//! [`Pruner`] keeps every trial's curve and standing in `prune.json` ([`record`]) and sets the
//! gate each run of a trial trains under ([`gate`]), in the search's process or a child's.
//!
//! The best trial is chosen among those that trained to their last epoch: a pruned trial's
//! value is from fewer epochs, not comparable.

pub(in crate::sweep) mod asha;
mod gate;
mod median;
mod own_files;
mod record;

use std::path::{Path, PathBuf};

pub use gate::{GateSpec, ReadRecord};
pub use record::{read_curve, Curve, Record, Standing};

use super::space::{PruneConfig, PruneMethod};
use crate::config::MonitorMode;
use crate::error::Error;
use crate::record::{write_atomic, RecordError, RunStatus, RunSummary};
use own_files::{describe, from_files, stopped_at};

/// A search's pruner: its record, and the decisions on it.
pub struct Pruner {
    config: PruneConfig,
    mode: MonitorMode,
    rungs: Vec<usize>,
    path: PathBuf,
    record: Record,
    /// Lines saying what the trials' own files changed in the record at open.
    rebuilt: Vec<String>,
}

/// `prune.json` in `dir`.
fn path(dir: &Path) -> PathBuf {
    dir.join("prune.json")
}

impl Pruner {
    /// The pruner of the search in `dir` whose trials train `epochs` epochs, with the record an
    /// earlier process left, if any, checked against the `trials`' own files ([`Self::rebuilt`]
    /// says what they changed).
    pub fn open(
        dir: &Path,
        config: PruneConfig,
        monitor: &str,
        mode: MonitorMode,
        epochs: usize,
        trials: &[usize],
    ) -> Result<Pruner, Error> {
        let path = path(dir);
        let record = Record::read(&path)?.unwrap_or_else(|| Record {
            monitor: monitor.to_string(),
            ..Record::default()
        });
        let rungs = match config.method {
            PruneMethod::Asha => asha::rungs(config.min_epochs, config.reduction, epochs),
            PruneMethod::Median => Vec::new(),
        };
        let mut pruner = Pruner {
            config,
            mode,
            rungs,
            path,
            record,
            rebuilt: Vec::new(),
        };
        pruner.reconcile(dir, trials)?;
        Ok(pruner)
    }

    /// After a stop, the trials' own files are the truth ([`from_files`]): a trial the record
    /// does not list, or lists as running, takes the standing its summary and snapshots give
    /// it. So a record lost, or one that a stop left behind its trials (a summary written, the
    /// record not yet), neither retrains a pruned trial nor loses a paused one.
    fn reconcile(&mut self, dir: &Path, trials: &[usize]) -> Result<(), Error> {
        // A trial the search does not have would rank at the rungs beside its own.
        if let Some(stray) = (self.record.trials.keys()).find(|n| !trials.contains(n)) {
            let mut listed: Vec<String> = trials.iter().take(6).map(|n| n.to_string()).collect();
            if trials.len() > 6 {
                listed.push(format!("... {}", trials[trials.len() - 1]));
            }
            let message = format!(
                "trials.{stray}: no trial {stray} among the ones this record keeps ({})",
                listed.join(", ")
            );
            return Err(RecordError::corrupt(&self.path, None, message).into());
        }
        let monitor = self.record.monitor.clone();
        for &trial in trials {
            let recorded = self.record.trials.get(&trial).map(|c| c.standing);
            if !matches!(recorded, None | Some(Standing::Running)) {
                continue;
            }
            let Some(found) = from_files(&dir.join(trial_name(trial)), &monitor)? else {
                continue;
            };
            if recorded == Some(found.standing) {
                continue;
            }
            let was = match recorded {
                None => "not in the pruning record".to_string(),
                Some(_) => "recorded running".to_string(),
            };
            self.rebuilt.push(format!(
                "{}: {was}; its own files say {} after epoch {}, and the search goes on from \
                 there",
                trial_name(trial),
                describe(found.standing),
                found.epochs()
            ));
            self.record.trials.insert(trial, found);
        }
        match self.rebuilt.is_empty() {
            true => Ok(()),
            false => self.record.write(&self.path),
        }
    }

    /// What [`Self::open`] rebuilt from the trials' files, one line each, for the user.
    pub fn rebuilt(&mut self) -> Vec<String> {
        std::mem::take(&mut self.rebuilt)
    }

    /// The trials a stop left running, to go on before any other.
    pub fn interrupted(&self) -> Vec<usize> {
        self.record
            .trials
            .iter()
            .filter(|(_, c)| c.standing == Standing::Running)
            .map(|(&t, _)| t)
            .collect()
    }

    fn standing(&self, trial: usize) -> Option<Standing> {
        self.record.trials.get(&trial).map(|c| c.standing)
    }

    /// Whether the trial is done with: completed or pruned (a resumed search leaves it).
    pub fn settled(&self, trial: usize) -> bool {
        matches!(
            self.standing(trial),
            Some(Standing::Completed | Standing::Pruned)
        )
    }

    /// Whether the trial waits at a rung, to be promoted or pruned (not started anew).
    pub fn paused(&self, trial: usize) -> bool {
        self.standing(trial) == Some(Standing::Paused)
    }

    /// A paused trial to train on now (ASHA), marked running: one `can_run` accepts (a trial
    /// this process holds). One it refuses is recorded as failed, so that it is asked for once.
    pub fn promote(&mut self, can_run: impl Fn(usize) -> bool) -> Result<Option<usize>, Error> {
        loop {
            let found = match self.config.method {
                PruneMethod::Asha => {
                    asha::promotable(&self.record, &self.rungs, self.mode, self.config.reduction)
                }
                PruneMethod::Median => None,
            };
            match found {
                Some(trial) if can_run(trial) => {
                    self.started(trial)?;
                    return Ok(Some(trial));
                }
                Some(trial) => self.failed(trial)?,
                None => return Ok(None),
            }
        }
    }

    /// Records that the trial failed (before or while it trained): never promoted.
    pub fn failed(&mut self, trial: usize) -> Result<(), Error> {
        self.set(trial, Standing::Failed)
    }

    /// Records the trial's `standing` (a trial not seen before starts with no values).
    fn set(&mut self, trial: usize, standing: Standing) -> Result<(), Error> {
        let curve = self.record.trials.entry(trial).or_insert(Curve {
            values: Vec::new(),
            standing,
            reason: None,
        });
        curve.standing = standing;
        self.record.write(&self.path)
    }

    /// When nothing else is left to train: if no trial has trained to its last epoch, the best
    /// trial paused at the highest rung goes on (marked running), so that a search of fewer
    /// trials than its rungs need still has a trial trained to the end to choose.
    pub fn promote_last(&mut self) -> Result<Option<usize>, Error> {
        let done = self
            .record
            .trials
            .values()
            .any(|c| matches!(c.standing, Standing::Completed | Standing::Running));
        // The highest rung with a paused trial that has a value there (one whose value is
        // not a number cannot be ranked).
        let mut rungs: Vec<usize> = (self.record.trials.values())
            .filter(|c| c.standing == Standing::Paused)
            .map(Curve::epochs)
            .collect();
        rungs.sort_unstable_by(|a, b| b.cmp(a));
        let found = match done {
            true => None,
            false => (rungs.into_iter())
                .find_map(|rung| asha::best_paused_at(&self.record, rung, self.mode)),
        };
        if let Some(trial) = found {
            self.started(trial)?;
        }
        Ok(found)
    }

    /// The gate for the trial's next run in `run_dir`, from the epochs it has trained there
    /// (its snapshots, which a record left behind by a stop may not have seen).
    pub fn gate(&self, run_dir: &Path) -> Result<Option<GateSpec>, Error> {
        let done = read_curve(run_dir, &self.record.monitor)?.len();
        match self.config.method {
            // A run that reached a rung but whose pause there is not on disk (a stop between
            // the epoch's snapshot and its summary) pauses at that rung: at once from a
            // checkpoint there, else after training the rung's epoch again.
            PruneMethod::Asha => {
                let reached = self.rungs.contains(&done) && !stopped_at(run_dir, done)?;
                let stop = match reached {
                    true => Some(done),
                    false => asha::next_stop(&self.rungs, done),
                };
                Ok(stop.map(|epoch| GateSpec::PauseAt { epoch }))
            }
            PruneMethod::Median => Ok(Some(GateSpec::Median {
                record: Some(self.path.clone()),
                run_dir: run_dir.to_path_buf(),
                monitor: self.record.monitor.clone(),
                mode: self.mode,
                min_epochs: self.config.min_epochs,
                startup: self.config.startup,
            })),
        }
    }

    /// Records that the trial starts (or goes on).
    pub fn started(&mut self, trial: usize) -> Result<(), Error> {
        self.set(trial, Standing::Running)
    }

    /// Records how the trial's run in `run_dir` ended: failed if it `failed` (its summary may
    /// be an earlier run's), else as its summary says; with its curve from its snapshots.
    pub fn ended(&mut self, trial: usize, run_dir: &Path, failed: bool) -> Result<Standing, Error> {
        let summary = match failed {
            true => None,
            false => RunSummary::read(run_dir)?,
        };
        let (standing, reason) = match summary.map(|s| (s.status, s.stopped_by)) {
            Some((RunStatus::Completed, _)) => (Standing::Completed, None),
            Some((RunStatus::Paused, _)) => (Standing::Paused, None),
            Some((RunStatus::Pruned, why)) => (Standing::Pruned, why),
            _ => (Standing::Failed, None),
        };
        let values = read_curve(run_dir, &self.record.monitor)?;
        self.record.trials.insert(
            trial,
            Curve {
                values,
                standing,
                reason,
            },
        );
        self.record.write(&self.path)?;
        Ok(standing)
    }

    /// At the search's end: every trial still paused is pruned (its summary says so too).
    /// Returns the pruned trials with why.
    pub fn finish(&mut self, dir: &Path) -> Result<Vec<(usize, String)>, Error> {
        let paused: Vec<usize> = self
            .record
            .trials
            .iter()
            .filter(|(_, c)| c.standing == Standing::Paused)
            .map(|(&t, _)| t)
            .collect();
        let mut pruned = Vec::new();
        for trial in paused {
            let rung = self.record.trials[&trial].epochs();
            let why =
                asha::left_behind(&self.record, trial, rung, self.mode, self.config.reduction);
            mark_pruned(&dir.join(trial_name(trial)), &why)?;
            let curve = self.record.trials.get_mut(&trial).expect("listed");
            curve.standing = Standing::Pruned;
            curve.reason = Some(why.clone());
            pruned.push((trial, why));
        }
        self.record.write(&self.path)?;
        Ok(pruned)
    }
}

/// Trial `n`'s directory name.
fn trial_name(n: usize) -> String {
    super::space::Trial {
        number: n,
        values: Default::default(),
    }
    .name()
}

/// Rewrites the summary of the paused run in `run_dir` as pruned, for `why` (a run that is
/// not paused is left as it is).
pub(in crate::sweep) fn mark_pruned(run_dir: &Path, why: &str) -> Result<(), Error> {
    let Some(mut summary) = RunSummary::read(run_dir)? else {
        return Ok(());
    };
    if summary.status != RunStatus::Paused {
        return Ok(());
    }
    summary.status = RunStatus::Pruned;
    summary.stopped_by = Some(why.to_string());
    let path = run_dir.join("summary.json");
    let json = serde_json::to_vec_pretty(&summary).expect("summaries serialise");
    write_atomic(&path, &json).map_err(|e| Error::io(&path, e))
}

#[cfg(test)]
mod tests;
