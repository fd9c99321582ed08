//! One trial of a study, trained by this worker in its own process: its run directory under
//! the worker's sweep directory, its epochs' monitored values written to the study as they
//! come ([`Reporting`]), and its end written ([`ending`](super::ending)).

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use super::ending::{ending, record, Outcome};
use super::median::reader;
use super::population::{carry_out, Prepare};
use super::reporting::Reporting;
use super::storage::Storage;
use crate::error::Error;
use crate::record::{Observer, RunSummary};
use crate::sweep::prune::GateSpec;
use crate::sweep::space::Trial;
use crate::sweep::trial_config::TrialBuild;
use crate::sweep::trial_run::train_or_resume;

/// A trial this worker trains.
pub struct Training<'a> {
    pub storage: &'a Arc<Mutex<Storage>>,
    /// The study's id in the storage.
    pub study: usize,
    pub build: TrialBuild<'a>,
    pub monitor: &'a str,
    pub stop: Arc<AtomicBool>,
}

impl Training<'_> {
    /// Trains trial `id` (`trial`) in `dir`, a population's member after its `prepare` (the
    /// copy it makes, or its own run found), asking `gate` after each epoch, and records how
    /// it ended (a failed preparation as its failure); returns its error, and whether the
    /// result was this worker's to record.
    pub fn run(
        &self,
        id: usize,
        trial: &Trial,
        dir: &Path,
        (gate, prepare): (Option<GateSpec>, Option<Prepare>),
        observer: Box<dyn Observer>,
    ) -> Result<(Option<String>, bool), Error> {
        let run_dir = dir.join(trial.name());
        let storage = Arc::clone(self.storage);
        let observer = Box::new(Reporting::new(observer, storage, id, self.monitor));
        let kinds = self.build.kinds;
        let stop = Some(Arc::clone(&self.stop));
        let study = reader(Arc::clone(self.storage), self.study, self.monitor);
        let gate = gate.map(|g| g.into_gate_reading(Some(study)));
        crate::failpoint::pass("start");
        let prepared = prepare.map_or(Ok(()), |p| carry_out(self.storage, id, p, dir));
        let trained = (prepared.and_then(|()| self.build.config(trial)))
            .and_then(|cfg| train_or_resume(kinds, cfg, &run_dir, observer, gate, stop));
        let summary = RunSummary::read(&run_dir).ok().flatten();
        let outcome = match &trained {
            Ok(s) => Outcome::Trained(s.status.clone()),
            Err(Error::Interrupted) => Outcome::Stopped,
            Err(e) => Outcome::Failed(e.to_string()),
        };
        let ops = ending(id, trial, self.monitor, &outcome, summary.as_ref());
        let recorded = record(self.storage, id, ops)?;
        crate::failpoint::pass("ended");
        match trained {
            Err(Error::Interrupted) => Err(Error::Interrupted),
            other => Ok((other.err().map(|e| e.to_string()), recorded)),
        }
    }
}
