//! `tidemark report STORAGE`: every study of a journal ranked from the journal alone, from any
//! machine that can read it.

use super::journal_rows::{monitor_of, rows, running_on};
use super::lost::{refuse_lost, Searched};
use super::storage::Storage;
use crate::config::MonitorMode;
use crate::error::Error;
use crate::record::RecordError;
use crate::sweep::journal::replay::Journal;
use crate::sweep::journal::worker_id::worker_id;
use crate::sweep::plan::{read_plan, SearchPlan};
use crate::sweep::results::summary_rows::read_rows;
use crate::sweep::results::{last_values, rank, Interval, TrialRow};
use crate::sweep::search::write_results;
use std::collections::BTreeMap;
use std::path::Path;

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

/// A population's lineage of each trial, by number, from the study that the sweep directory
/// `dir` is a worker's of: the storage its `study.json` names, else its own `journal.log`
/// (a search alone's, named after its config's `run.name`). A journal that lost what the
/// members' own files show they trained (`monitor`'s values) is refused, naming it: a lineage
/// is never written from less than the members trained.
fn lineages(
    dir: &Path,
    monitor: &str,
    interval: usize,
) -> Result<BTreeMap<usize, Vec<Interval>>, Error> {
    let marker = dir.join("study.json");
    let (spec, name) = match std::fs::read_to_string(&marker) {
        Ok(text) => {
            let json: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| Error::io(&marker, std::io::Error::other(e.to_string())))?;
            let text = |k: &str| json[k].as_str().unwrap_or_default().to_string();
            (text("storage"), text("study"))
        }
        Err(_) => {
            let journal = dir.join("journal.log");
            // Read only inside the search's directory.
            crate::record::names::inside(dir, &journal).map_err(|why| {
                let message = format!("{why}; nothing was read or changed");
                Error::from(RecordError::corrupt(&journal, None, message))
            })?;
            let path = dir.join("config.toml");
            let config = std::fs::read_to_string(&path).unwrap_or_default();
            let table: toml::Table = toml::from_str(&config).unwrap_or_default();
            let name = (table.get("run").and_then(|r| r.get("name"))).and_then(|n| n.as_str());
            let Some(name) = name else {
                let message = "no run.name, which names the search's study in its journal";
                return Err(RecordError::corrupt(&path, None, message).into());
            };
            (journal.display().to_string(), name.to_string())
        }
    };
    // A journal file that is not there is read as one that holds nothing, never made.
    let missing = !spec.contains("://") && !Path::new(&spec).is_file();
    let read = || match missing {
        true => Ok(Journal::default()),
        false => Storage::whole(&spec, &worker_id()),
    };
    let searched = Searched {
        name: &name,
        spec: &spec,
        monitor,
        interval: Some(interval),
    };
    let journal = refuse_lost(dir, &searched, read)?;
    let Some(id) = journal.study(&name) else {
        return Ok(BTreeMap::new());
    };
    Ok((rows(&journal, id, &spec)?.into_iter())
        .map(|r| (r.trial, r.lineage))
        .collect())
}

/// Every trial of the search in `dir`, from the trials' own `summary.json` (whichever worker
/// or process trained them), ranked; writes `sweep.json` and `sweep.md` from them, and
/// `journal.log` unless the directory is a study's (`study.json`), whose journal is its
/// storage, written as the workers train (the shards' is `journal.log` itself).
pub fn merge(dir: &Path) -> Result<(Vec<TrialRow>, SearchPlan), Error> {
    let plan = read_plan(dir)?.search.ok_or_else(|| {
        Error::Usage(crate::error::UsageError::new(
            dir.display().to_string(),
            "a sweep of runs, not a search: its table is sweep.md",
        ))
    })?;
    let mut rows = read_rows(dir, &plan, BTreeMap::new())?;
    // A population's lineage is the study's: from its journal.
    if let Some(pbt) = &plan.pbt {
        let mut lineages = lineages(dir, &plan.monitor, pbt.interval)?;
        for row in &mut rows {
            row.lineage = lineages.remove(&row.trial).unwrap_or_default();
            row.values = last_values(&row.lineage, &row.values);
        }
    }
    rank(&mut rows, plan.mode);
    write_results(dir, &plan, &rows)?;
    Ok((rows, plan))
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
        let mut rows = rows(journal, id, spec)?;
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
