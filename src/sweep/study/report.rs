//! `tidemark report STORAGE`: every study of a journal ranked from the journal alone, from any
//! machine that can read it.

use super::rows::{monitor_of, rows, running_on};
use super::storage::Storage;
use crate::config::MonitorMode;
use crate::error::Error;
use crate::sweep::journal::worker_id::worker_id;
use crate::sweep::results::{rank, TrialRow};

/// One study of a journal, ranked.
#[derive(Debug, Clone)]
pub struct StudyReport {
    /// Its name.
    pub name: String,
    /// What it is ranked by.
    pub monitor: String,
    /// Lower or higher is better.
    pub mode: MonitorMode,
    /// Its trials, ranked; those not created yet are "not run".
    pub rows: Vec<TrialRow>,
    /// Workers whose trials are running, as the journal names them.
    pub workers: Vec<String>,
}

/// The studies tidemark made in the journal at `spec`.
pub fn report(spec: &str) -> Result<Vec<StudyReport>, Error> {
    let mut storage = Storage::open(spec, &worker_id())?;
    let journal = storage.sync()?;
    let mut reports = Vec::new();
    for (id, study) in journal.studies.iter().enumerate() {
        let Some((monitor, mode)) = monitor_of(journal, id).filter(|_| !study.deleted) else {
            continue;
        };
        let mut rows = rows(journal, id);
        rank(&mut rows, mode);
        let mut workers: Vec<String> = (running_on(journal, id).into_iter())
            .map(str::to_string)
            .collect();
        workers.dedup();
        reports.push(StudyReport {
            name: study.name.clone(),
            monitor,
            mode,
            rows,
            workers,
        });
    }
    Ok(reports)
}
