//! A trial's epochs written to the study as they come: each epoch's monitored value is an
//! Optuna intermediate value of the trial, which ASHA's rungs and Optuna's tools read. The
//! observer wraps the trial's own, in this process or in the child that trains it for a worker
//! packing its device ([`child`]: the child finds where to write beside its launch file).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::median::reader;
use super::storage::Storage;
use crate::config::Monitor;
use crate::error::Error;
use crate::kinds::Kinds;
use crate::record::{Event, Observer, RunSummary, Snapshot};
use crate::sweep::journal::op::Op;
use crate::sweep::journal::replay::Keep;
use crate::sweep::parallel::parent_death::SEARCH_PID;
use crate::sweep::parallel::processes::STUDY_STORAGE;

/// The trial's observer, which also writes each epoch's monitored value to the study.
pub struct Reporting {
    inner: Box<dyn Observer>,
    storage: Arc<Mutex<Storage>>,
    id: usize,
    monitor: String,
}

impl Reporting {
    /// Wraps `inner`, writing trial `id`'s `monitor` to `storage`.
    pub fn new(
        inner: Box<dyn Observer>,
        storage: Arc<Mutex<Storage>>,
        id: usize,
        monitor: &str,
    ) -> Reporting {
        Reporting {
            inner,
            storage,
            id,
            monitor: monitor.to_string(),
        }
    }
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

/// Where a child writes its trial's epochs: beside its launch file, as `trial-NNN.study.json`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Reports {
    /// The study's storage, as the worker was given it.
    pub storage: String,
    /// The worker's id.
    pub worker: String,
    /// The trial's id in the journal.
    pub trial: usize,
    /// Its study's id in the journal, for the median rule.
    pub study: usize,
    /// The monitored metric.
    pub monitor: String,
    /// The worker's process id: a child of another process (a search run later in the same
    /// directory, without `--storage`) does not report.
    pub pid: u32,
}

impl Reports {
    /// The file beside the launch file `launch`.
    fn path(launch: &Path) -> PathBuf {
        launch.with_extension("study.json")
    }

    /// Writes where the child of the launch file `launch` reports.
    pub fn write(&self, launch: &Path) -> Result<(), Error> {
        Ok(crate::record::write_json(&Reports::path(launch), self)?)
    }

    /// Where the child of `launch` reports, if its worker started it.
    fn read(launch: &Path) -> Result<Option<Reports>, Error> {
        let path = Reports::path(launch);
        if !path.exists() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        let reports: Reports = serde_json::from_str(&text).map_err(|e| {
            Error::Record(crate::record::RecordError::Corrupt {
                path: path.clone(),
                line: None,
                message: format!("not a trial's study file: {e}"),
            })
        })?;
        let parent = std::env::var(SEARCH_PID).ok();
        if parent != Some(reports.pid.to_string()) {
            return Ok(None);
        }
        // The storage is the one its search gave it, never one a file names.
        let given = std::env::var(STUDY_STORAGE).ok();
        if given.as_deref() != Some(reports.storage.as_str()) {
            let message = format!(
                "names the storage {}, where the search that started this trial writes to {}; \
                 nothing was written",
                reports.storage,
                given.as_deref().unwrap_or("none")
            );
            return Err(crate::record::RecordError::corrupt(&path, None, message).into());
        }
        Ok(Some(reports))
    }
}

/// `tidemark trial LAUNCH_FILE`: the trial of a parallel search, or, with a `study.json`
/// beside its launch file, of a worker's study, whose epochs it writes to the study (and
/// whose record the median rule reads).
pub fn child(
    kinds: &Kinds,
    launch: &Path,
    observer: Box<dyn Observer>,
) -> Result<RunSummary, Error> {
    let (observer, study): (Box<dyn Observer>, _) = match Reports::read(launch)? {
        None => (observer, None),
        Some(reports) => {
            // It writes its epochs, and the median rule reads the completed trials' curves.
            let keep = Keep {
                curves: true,
                params: false,
            };
            let storage = Storage::open(&reports.storage, &reports.worker)?.lean(keep);
            let storage = Arc::new(Mutex::new(storage));
            let study = reader(Arc::clone(&storage), reports.study, &reports.monitor);
            let observer = Reporting::new(observer, storage, reports.trial, &reports.monitor);
            (Box::new(observer), Some(study))
        }
    };
    crate::sweep::parallel::run_child(kinds, launch, observer, study)
}
