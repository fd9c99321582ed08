//! A search's trials one after another in the search's own process, under the pruner if it
//! has one: whenever a trial stops, a paused trial that ranks high enough at its rung goes on
//! first (ASHA), else the next new trial starts; at the end, trials left paused are pruned.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::prune::{GateSpec, Pruner};
use super::space::Trial;
use super::tpe_draws::Draws;
use super::trial_config::TrialBuild;
use super::trial_run::train_or_resume;
use super::trial_run::TrialErrors;
use crate::error::Error;
use crate::record::Observer;

/// What the trials are trained with.
pub(super) struct Sequential<'a, 'o> {
    /// The sweep directory.
    pub dir: &'a Path,
    /// Builds a trial's config when it trains, and its task.
    pub build: TrialBuild<'a>,
    /// Watches trial `i` of `n` (`0`: the search itself).
    pub observer: &'o mut dyn FnMut(usize, usize) -> Box<dyn Observer>,
    /// Trials in the search.
    pub n: usize,
    /// TPE's draws, for a search that draws its trials as they start.
    pub draws: Option<&'a mut Draws>,
    /// Set by a signal: the trial in training checkpoints and the search stops.
    pub stop: Arc<AtomicBool>,
}

impl Sequential<'_, '_> {
    /// Trains `todo` in order, with `pruner`'s promotions first; returns the errors of the
    /// trials that failed, by number.
    pub fn train(
        &mut self,
        todo: Vec<&Trial>,
        mut pruner: Option<&mut Pruner>,
    ) -> Result<TrialErrors, Error> {
        let by_number: BTreeMap<usize, &Trial> = todo.iter().map(|t| (t.number, *t)).collect();
        // Trials a stop left running go on first, as they would have.
        let interrupted = pruner
            .as_deref()
            .map(Pruner::interrupted)
            .unwrap_or_default();
        let (first, rest): (Vec<&Trial>, Vec<&Trial>) = todo
            .into_iter()
            .partition(|t| interrupted.contains(&t.number));
        let mut queue = first.into_iter().chain(rest);
        let mut errors = BTreeMap::new();
        loop {
            if self.stop.load(Ordering::SeqCst) {
                return Err(Error::Interrupted);
            }
            let promoted = match pruner.as_deref_mut() {
                Some(p) => (p.promote(|n| by_number.contains_key(&n))?)
                    .and_then(|n| by_number.get(&n).copied()),
                None => None,
            };
            // A trial paused at a rung (by an earlier process) waits to be promoted.
            let fresh = match promoted {
                Some(_) => None,
                None => queue.find(|t| !pruner.as_deref().is_some_and(|p| p.paused(t.number))),
            };
            let last = match (promoted, fresh, pruner.as_deref_mut()) {
                (None, None, Some(p)) => p.promote_last()?.and_then(|n| by_number.get(&n).copied()),
                _ => None,
            };
            let trial = match (promoted.or(last), fresh) {
                (Some(trial), _) => {
                    let line =
                        format!("{} goes on: it ranks high enough at its rung", trial.name());
                    (self.observer)(0, self.n).message(&line);
                    trial
                }
                (None, Some(trial)) => trial,
                (None, None) => break,
            };
            if let Some(e) = self.one(trial, pruner.as_deref_mut())? {
                errors.insert(trial.number, e);
            } else {
                errors.remove(&trial.number);
            }
        }
        if let Some(p) = pruner {
            let pruned = p.finish(self.dir)?;
            for (trial, why) in pruned {
                (self.observer)(0, self.n).message(&format!("trial-{trial:03} pruned: {why}"));
            }
        }
        Ok(errors)
    }

    /// Trains (or resumes) one run of `trial` under the pruner's gate; returns its error.
    fn one(&mut self, trial: &Trial, pruner: Option<&mut Pruner>) -> Result<Option<String>, Error> {
        let drawn = match self.draws.as_deref_mut() {
            Some(draws) => Some(draws.trial(trial)?.0),
            None => None,
        };
        let trial = drawn.as_ref().unwrap_or(trial);
        let run_dir = self.dir.join(trial.name());
        let gate = match pruner.as_deref() {
            Some(p) => p.gate(&run_dir)?,
            None => None,
        };
        let mut pruner = pruner;
        if let Some(p) = pruner.as_deref_mut() {
            p.started(trial.number)?;
        }
        let observer = (self.observer)(trial.number, self.n);
        crate::failpoint::pass("start");
        let stop = Some(Arc::clone(&self.stop));
        let kinds = self.build.kinds;
        let trained = (self.build.config(trial)).and_then(|cfg| {
            train_or_resume(
                kinds,
                cfg,
                &run_dir,
                observer,
                gate.map(GateSpec::into_gate),
                stop,
            )
        });
        // Stopped by a signal: left running in the record, it goes on first on resume.
        if let Err(Error::Interrupted) = trained {
            return Err(Error::Interrupted);
        }
        if let Some(p) = pruner {
            p.ended(trial.number, &run_dir, trained.is_err())?;
        }
        crate::failpoint::pass("ended");
        Ok(trained.err().map(|e| e.to_string()))
    }
}
