//! A study's table, from its journal: `tidemark report STORAGE` (every study of a journal,
//! from any machine that can read it), `tidemark report DIR` ([`merge`]: the search of a sweep
//! directory) and the end of every search ([`ranked`]).

use super::journal_rows::{attach, monitor_of, rows, running_on, timeline};
use super::lost::{refuse_lost, Searched};
use super::recorded::{recorded, study_of};
use super::storage::Storage;
use crate::config::MonitorMode;
use crate::error::{Error, SweepError};
use crate::sweep::journal::replay::Journal;
use crate::sweep::journal::worker_id::worker_id;
use crate::sweep::plan::{write_plan, Plan, SearchPlan};
use crate::sweep::prune::mark_pruned;
use crate::sweep::results::{rank, TrialRow, TrialStatus};
use crate::sweep::search::write_results;
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

/// Every trial of the search in `dir`, whichever worker or process trained it, ranked from its
/// study's journal (the storage its `study.json` names, else its `journal.log`), with the
/// leases and times of the trials its workers packed; writes `plan.json`, `sweep.json`,
/// `sweep.md` and `sweep.svg` from them. A journal that lost what the trials' own files show
/// they trained is refused, naming it, and nothing is written.
pub fn merge(dir: &Path) -> Result<(Vec<TrialRow>, SearchPlan), Error> {
    let (spec, name) = study_of(dir)?;
    let plan = recorded(dir, &spec, &name)?;
    let searched = Searched {
        name: &name,
        spec: &spec,
        monitor: &plan.monitor,
        interval: plan.pbt.as_ref().map(|p| p.interval),
    };
    let journal = refuse_lost(dir, &searched, || Storage::whole(&spec, &worker_id()))?;
    let study = journal.study(&name).ok_or_else(|| {
        Error::Sweep(SweepError::Plan {
            origin: spec.clone(),
            message: format!("study {name} is gone from it while it was read"),
        })
    })?;
    let rows = ranked(&journal, study, &spec, dir, &plan)?;
    write_plan(dir, &Plan::search(plan.clone()))?;
    Ok((rows, plan))
}

/// Every trial of study `study` in `journal` (read whole, from `spec`), ranked, written into
/// the sweep directory `dir` (`sweep.json`, `sweep.md`, `sweep.svg`).
pub fn ranked(
    journal: &Journal,
    study: usize,
    spec: &str,
    dir: &Path,
    plan: &SearchPlan,
) -> Result<Vec<TrialRow>, Error> {
    let mut rows = rows(journal, study, spec)?;
    // Where its workers packed their devices: leases and times.
    let timeline = timeline(journal, study, spec)?;
    attach(&mut rows, &timeline);
    // A trial ASHA left paused and the study pruned at its end says so in its own summary too,
    // whichever worker pruned it.
    for row in rows.iter().filter(|r| r.status == TrialStatus::Pruned) {
        let why = row.reason.as_deref().unwrap_or("pruned at the study's end");
        mark_pruned(&dir.join(&row.name), why)?;
    }
    rank(&mut rows, plan.mode);
    crate::failpoint::pass("results");
    write_results(dir, plan, &rows, timeline.packed())?;
    Ok(rows)
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
        attach(&mut rows, &timeline(journal, id, spec)?);
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
