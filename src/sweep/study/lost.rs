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
use crate::record::{current_epochs, read_snapshots};
use crate::sweep::journal::replay::Journal;
use crate::sweep::space::Trial;
use crate::train::Checkpoint;

/// The trials' run directories in the sweep directory `dir` (`trial-007`), by number.
fn trial_dirs(dir: &Path) -> Vec<(usize, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(usize, PathBuf)> = (entries.flatten())
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let number = name.strip_prefix("trial-")?.parse::<usize>().ok()?;
            (name == Trial::name_of(number)).then(|| (number, entry.path()))
        })
        .collect();
    out.sort();
    out
}

/// Reads the latest checkpoint of every trial in the sweep directory `dir` that has one, as a
/// resume goes on from it or a population's member copies it: each a directory inside the
/// search's, its files its manifest lists, each inside, at its size, its state in range. One
/// that is not is the error naming it, before anything of the search is written.
pub fn check_checkpoints(dir: &Path) -> Result<(), Error> {
    for (_, run) in trial_dirs(dir) {
        crate::record::names::inside(dir, &run).map_err(|why| {
            Error::Sweep(SweepError::Plan {
                origin: run.display().to_string(),
                message: format!("{why}; nothing was read or changed"),
            })
        })?;
        if run.join("checkpoints").join("latest").exists() {
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
    for (number, run) in trial_dirs(dir) {
        let log = run.join("snapshots.jsonl");
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

/// Refuses, naming the journal at `spec`, a search in `dir` (the study `name`, ranked by
/// `monitor`) whose journal holds less than its trials' own files: a trial that trained and
/// that the journal has no record of (the study itself gone, for one emptied or removed), or,
/// in a population (`population`), a member's value at an epoch its snapshots record and the
/// journal does not.
pub fn refuse_lost(
    journal: &Journal,
    name: &str,
    dir: &Path,
    spec: &str,
    monitor: &str,
    population: bool,
) -> Result<(), Error> {
    let trained = trained(dir, monitor)?;
    let Some((&first, _)) = trained.iter().next() else {
        return Ok(());
    };
    let refuse = |what: String| {
        Err(Error::Sweep(SweepError::Plan {
            origin: spec.to_string(),
            message: format!(
                "{what}: it is the search's state, and nothing is decided from less; restore \
                 it, or start the search anew elsewhere"
            ),
        }))
    };
    let Some(study) = journal.study(name) else {
        let count = trained.len();
        return refuse(format!(
            "holds no record of search {name}, whose {} and {} more trained here",
            Trial::name_of(first),
            count - 1
        ));
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
        if !population {
            continue;
        }
        let lost = (epochs.keys()).find(|&&e| !t.intermediate.contains_key(&(e as i64)));
        if let Some(epoch) = lost {
            return refuse(format!(
                "holds no {monitor} of {} at epoch {epoch}, which its snapshots.jsonl has",
                Trial::name_of(number)
            ));
        }
    }
    Ok(())
}
