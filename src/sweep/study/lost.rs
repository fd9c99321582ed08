//! What a search's journal lost, found from its trials' own files. The journal is the search's
//! state: every trial that trained is in it, and the decisions (a population's copies, ASHA's
//! rungs, the median rule, TPE's draws) are taken on the values it holds. Where a trial's own
//! files show more than the journal holds (the journal emptied, removed or cut short by hand),
//! a resume or a report refuses, naming the journal, before anything is decided or written:
//! what went with it (who copied whom, which trial a rung promoted) is in no other file, and a
//! value read as missing would be decided on as none.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::Monitor;
use crate::error::{Error, SweepError};
use crate::record::names::inside;
use crate::record::{current_epochs, read_snapshots, RunStatus, RunSummary};
use crate::sweep::journal::replay::Journal;
use crate::sweep::space::Trial;
use crate::train::Checkpoint;

/// The trials' run directories in the sweep directory `dir` (`trial-007`), by number, each
/// inside it: one that is a link out of it is the error naming it, read no further.
fn trial_dirs(dir: &Path) -> Result<Vec<(usize, PathBuf)>, Error> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut out: Vec<(usize, PathBuf)> = (entries.flatten())
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let number = name.strip_prefix("trial-")?.parse::<usize>().ok()?;
            (name == Trial::name_of(number)).then(|| (number, entry.path()))
        })
        .collect();
    out.sort();
    for (_, run) in &out {
        inside(dir, run).map_err(|why| {
            Error::Sweep(SweepError::Plan {
                origin: run.display().to_string(),
                message: format!("{why}; nothing was read or changed"),
            })
        })?;
    }
    Ok(out)
}

/// Reads the latest checkpoint of every trial in the sweep directory `dir` that a resume goes
/// on from (one that did not complete; a population's member copies another's before it
/// completes): its files those its manifest lists, each inside the search, at its size, its
/// state in range. One that is not is the error naming it, before anything of the search is
/// written. A completed trial's checkpoints are not read: they may have been cleared away.
pub fn check_checkpoints(dir: &Path) -> Result<(), Error> {
    for (_, run) in trial_dirs(dir)? {
        let completed = RunSummary::read(&run)
            .ok()
            .flatten()
            .is_some_and(|s| s.status == RunStatus::Completed);
        if !completed && run.join("checkpoints").join("latest").exists() {
            Checkpoint::latest(&run)?;
        }
    }
    Ok(())
}

/// The epochs each trial of the sweep directory `dir` trained, by number, with its value of
/// `monitor` at each (where it recorded one), from its own `snapshots.jsonl`; a trial with a
/// checkpoint and no epoch yet trained none. Trials that never started are left out.
fn trained(dir: &Path, monitor: &str) -> Result<BTreeMap<usize, BTreeMap<usize, f64>>, Error> {
    let mut out = BTreeMap::new();
    for (number, run) in trial_dirs(dir)? {
        let log = run.join("snapshots.jsonl");
        inside(&run, &log).map_err(|why| {
            let message = format!("{why}; nothing was read or changed");
            Error::from(crate::record::RecordError::corrupt(&log, None, message))
        })?;
        let epochs: BTreeMap<usize, f64> = match log.is_file() {
            true => {
                let snapshots = read_snapshots(&log)?;
                (current_epochs(&snapshots).into_iter())
                    .filter_map(|s| {
                        let value = Monitor::value_of(monitor, s.val_loss, |k| s.metric(k));
                        Some((s.epoch, value?))
                    })
                    .collect()
            }
            false => BTreeMap::new(),
        };
        let started = run.join("checkpoints").join("latest").exists();
        if started || !epochs.is_empty() {
            out.insert(number, epochs);
        }
    }
    Ok(out)
}

/// What the search is, for [`refuse_lost`]: its study's name in the journal at `spec`, the
/// metric it ranks by, and, for a population, its interval (the epochs it decides at are its
/// multiples).
pub struct Searched<'a> {
    pub name: &'a str,
    pub spec: &'a str,
    pub monitor: &'a str,
    pub interval: Option<usize>,
}

/// Refuses, naming the journal, a search in `dir` whose journal (read by `journal`, after the
/// trials' own files, so that a value another worker reports meanwhile is in it) holds less
/// than its trials' own files: a trial that trained and that the journal has no record of (the
/// study itself gone, for one emptied or removed), or, in a population, a member's value at an
/// interval it trained past, which a decision was taken on, or at the one it waits at. (A
/// value whose report was lost in between is no decision's.) Returns the journal read.
pub fn refuse_lost(
    dir: &Path,
    search: &Searched,
    journal: impl FnOnce() -> Result<Journal, Error>,
) -> Result<Journal, Error> {
    let trained = trained(dir, search.monitor)?;
    let journal = journal()?;
    let Some((&first, _)) = trained.iter().next() else {
        return Ok(journal);
    };
    let refuse = |what: String| {
        Err(Error::Sweep(SweepError::Plan {
            origin: search.spec.to_string(),
            message: format!(
                "{what}: it is the search's state, and nothing is decided from less; restore \
                 it, or start the search anew elsewhere"
            ),
        }))
    };
    let Some(study) = journal.study(search.name) else {
        let missing = !search.spec.contains("://") && !Path::new(search.spec).exists();
        let holds = match missing {
            true => "is missing",
            false => "holds no record of this search",
        };
        let others = match trained.len() - 1 {
            0 => String::new(),
            1 => " and 1 more".to_string(),
            n => format!(" and {n} more"),
        };
        let trials = Trial::name_of(first);
        return refuse(format!("{holds}, and its {trials}{others} trained here"));
    };
    // The last record of each number: a trial trained again is a new record of its number.
    let mut recorded = BTreeMap::new();
    for &id in &journal.studies[study].trials {
        let t = &journal.trials[&id];
        if let Some(n) = t.number {
            recorded.insert(n, t);
        }
    }
    for (&number, epochs) in &trained {
        let Some(t) = recorded.get(&number) else {
            return refuse(format!(
                "holds no record of {}, which trained here",
                Trial::name_of(number)
            ));
        };
        let Some(interval) = search.interval.filter(|&i| i > 0) else {
            continue;
        };
        // The intervals it trained past, a decision taken on its value at each, and the one
        // it waits at, to be decided on.
        let last = epochs.keys().next_back().copied().unwrap_or(0);
        let waits = t.paused_at();
        let decided =
            (epochs.keys()).filter(|&&e| e % interval == 0 && (e < last || waits == Some(e)));
        let lost = decided
            .into_iter()
            .find(|&&e| !t.intermediate.contains_key(&(e as i64)));
        if let Some(epoch) = lost {
            return refuse(format!(
                "holds no {} of {} at epoch {epoch}, which its snapshots.jsonl has",
                search.monitor,
                Trial::name_of(number)
            ));
        }
    }
    Ok(journal)
}
