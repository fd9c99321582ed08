//! One trial of a study trained in this worker's own process: its run directory under the
//! worker's sweep directory, its epochs' monitored values written to the study as they come
//! ([`Reporting`]), and its end written ([`ending`](super::ending)); and [`InProcess`], the
//! runner that trains a worker's trials this way, one at a time.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use super::drive::{tell_ended, Runner, Taken};
use super::ending::{ending, record, Outcome};
use super::joined::Study;
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
    fn run(
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

/// The runner of a worker that trains in its own process: one trial at a time, to its end (a
/// search alone, a worker of a study without `sweep.parallel`). Each trial's progress goes to
/// its own observer, `observer(number, trials)`.
pub struct InProcess<'a, F> {
    pub training: Training<'a>,
    pub study: &'a Study,
    /// The worker's sweep directory.
    pub dir: &'a Path,
    pub observer: F,
}

impl<F: FnMut(usize, usize) -> Box<dyn Observer>> Runner for InProcess<'_, F> {
    type Claimed = Taken;

    fn id_of(claimed: &Taken) -> usize {
        claimed.id
    }

    fn has_room(&self) -> bool {
        true
    }

    fn idle(&self) -> bool {
        true
    }

    fn ids(&self) -> Vec<usize> {
        Vec::new()
    }

    fn claim(&mut self, taken: Taken, _: &mut dyn Observer) -> Result<Option<Taken>, Error> {
        Ok(Some(taken))
    }

    /// Trains the trial to its end (or its rung), recorded, and tells how it ended.
    fn start(&mut self, taken: &Taken, observer: &mut dyn Observer) -> Result<bool, Error> {
        let trial = &taken.trial;
        let ran = {
            let observer = (self.observer)(trial.number, self.study.trials());
            let gate = (self.study).gate(taken.pause_at, &self.dir.join(trial.name()));
            let steps = (gate, taken.prepare);
            (self.training).run(taken.id, trial, self.dir, steps, observer)?
        };
        let study = (&**self.training.storage, self.study);
        tell_ended(study, (trial, ran.1, None), observer)?;
        Ok(true)
    }

    /// Nothing: a trial ends inside [`start`](Runner::start).
    fn reap(&mut self, _: &AtomicBool, _: &mut dyn Observer) -> Result<(), Error> {
        Ok(())
    }

    /// Nothing: the trial's own observer shows it.
    fn show(&mut self, _: &mut dyn Observer) -> Result<(), Error> {
        Ok(())
    }

    /// Nothing: a trial a signal stopped was handed back as it ended, inside
    /// [`start`](Runner::start).
    fn hand_back(&mut self, _: Option<Taken>, _: &mut dyn Observer) -> Result<(), Error> {
        Ok(())
    }
}
