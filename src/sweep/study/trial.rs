//! One trial of a study, trained by this worker: its run directory under the worker's sweep
//! directory, its epochs' monitored values written to the study as they come (Optuna's
//! intermediate values), and its end written under the lock, unless another worker has taken
//! it over meanwhile (whose result it is then).

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use serde_json::json;

use super::rungs::Rungs;
use super::storage::Storage;
use crate::config::Monitor;
use crate::error::Error;
use crate::record::{Event, Observer, RunStatus, RunSummary, Snapshot};
use crate::sweep::journal::attrs::{ended, WORKER};
use crate::sweep::journal::op::{now, Op, State};
use crate::sweep::prune::GateSpec;
use crate::sweep::results::SweepRow;
use crate::sweep::space::Trial;
use crate::sweep::trial_config::TrialBuild;
use crate::sweep::trial_run::train_or_resume;

/// A trial this worker trains.
pub struct Training<'a> {
    pub storage: &'a Arc<Mutex<Storage>>,
    pub build: TrialBuild<'a>,
    pub monitor: &'a str,
    pub stop: Arc<AtomicBool>,
}

impl Training<'_> {
    /// Trains trial `id` (`trial`) in `dir` and records how it ended; returns its error, and
    /// whether the result was this worker's to record.
    pub fn run(
        &self,
        id: usize,
        trial: &Trial,
        dir: &Path,
        pause_at: Option<usize>,
        observer: Box<dyn Observer>,
    ) -> Result<(Option<String>, bool), Error> {
        let run_dir = dir.join(trial.name());
        let observer = Box::new(Reporting {
            inner: observer,
            storage: Arc::clone(self.storage),
            id,
            monitor: self.monitor.to_string(),
        });
        let kinds = self.build.kinds;
        let stop = Some(Arc::clone(&self.stop));
        let gate = pause_at.map(|epoch| GateSpec::PauseAt { epoch });
        let trained = (self.build.config(trial))
            .and_then(|cfg| train_or_resume(kinds, cfg, &run_dir, observer, gate, stop));
        let summary = RunSummary::read(&run_dir).ok().flatten();
        let ops = self.ending(id, trial, &trained, summary);
        // Recorded only while the trial is still this worker's (not taken over meanwhile).
        let recorded = (self.storage.lock().expect("storage")).transact(|journal, me| {
            let t = &journal.trials[id];
            let owner = t.system_attrs.get(WORKER).and_then(|w| w.as_str());
            match t.state == State::Running && owner == Some(me) {
                true => (ops.clone(), true),
                false => (Vec::new(), false),
            }
        })?;
        match trained {
            Err(Error::Interrupted) => Err(Error::Interrupted),
            other => Ok((other.err().map(|e| e.to_string()), recorded)),
        }
    }

    /// The operations that end trial `id`: its value, what it took, or why it failed; handed
    /// back (WAITING) when a signal stopped it.
    fn ending(
        &self,
        id: usize,
        trial: &Trial,
        trained: &Result<RunSummary, Error>,
        summary: Option<RunSummary>,
    ) -> Vec<Op> {
        let value = summary.as_ref().and_then(|s| s.monitored(self.monitor));
        let (state, values, reason) = match (trained, value) {
            (Err(Error::Interrupted), _) => (State::Waiting, None, None),
            (Ok(s), Some(v)) if s.status == RunStatus::Completed => {
                (State::Complete, Some(vec![v]), None)
            }
            (Ok(s), _) if s.status == RunStatus::Paused => (State::Waiting, None, None),
            (Ok(_), _) => (
                State::Fail,
                None,
                Some(format!("it recorded no {}", self.monitor)),
            ),
            (Err(e), _) => (State::Fail, None, Some(e.to_string())),
        };
        let memory = (summary.as_ref())
            .map(|s| serde_json::to_value(SweepRow::of(trial.number, s.clone())))
            .map(|m| m.expect("a row serialises"));
        let epochs = summary.as_ref().map(|s| s.epochs);
        let mut ops = ended(id, epochs, memory, reason.as_deref());
        match (trained, &summary) {
            // Paused at its rung: WAITING there, for ASHA to promote or prune.
            (Ok(s), _) if s.status == RunStatus::Paused => {
                ops.extend(Rungs::pause(id, s.epochs));
                return ops;
            }
            // Stopped by a signal: handed back, with no owner.
            (Err(Error::Interrupted), _) => ops.push(Op::SystemAttr {
                trial: id,
                key: WORKER.into(),
                value: json!(null),
            }),
            _ => {}
        }
        ops.push(Op::State {
            trial: id,
            state,
            values,
            at: now(),
        });
        ops
    }
}

/// The trial's observer, which also writes each epoch's monitored value to the study.
struct Reporting {
    inner: Box<dyn Observer>,
    storage: Arc<Mutex<Storage>>,
    id: usize,
    monitor: String,
}

impl Observer for Reporting {
    fn message(&mut self, text: &str) {
        self.inner.message(text)
    }
    fn warning(&mut self, warning: &crate::record::Warning) {
        self.inner.warning(warning)
    }
    fn step(&mut self, progress: &crate::record::EpochProgress) {
        self.inner.step(progress)
    }
    fn step_done(&mut self, epoch: usize, step: usize) {
        self.inner.step_done(epoch, step)
    }
    fn snapshot(&mut self, snapshot: &Snapshot) {
        if snapshot.event == Event::Epoch {
            let value = Monitor::value_of(&self.monitor, snapshot.val_loss, |k| snapshot.metric(k));
            if let Some(value) = value {
                let op = Op::Intermediate {
                    trial: self.id,
                    step: snapshot.epoch,
                    value,
                };
                // A value that cannot be written is missing from Optuna's curve, not the run's.
                let _ = self.storage.lock().expect("storage").append(&[op]);
            }
        }
        self.inner.snapshot(snapshot)
    }
}
