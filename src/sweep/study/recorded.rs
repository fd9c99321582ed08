//! The search a sweep directory holds, as its journal records it: where that journal is (the
//! storage its `study.json` names, for a worker of a shared study, else its own `journal.log`)
//! and the search itself ([`SEARCH`]), which `sweep --resume` and `tidemark report DIR` go on
//! from, and which a worker checks before it shares the directory (`shared_dir`). `plan.json`
//! shows the same search for people and is not read back, but for a study whose journal an
//! earlier tidemark wrote without it, or a sweep of runs it wrote without a journal.

use std::path::{Path, PathBuf};

use super::lost::{refuse_lost, Searched};
use super::storage::Storage;
use crate::config::defaults;
use crate::error::{Error, SweepError};
use crate::record::RecordError;
use crate::sweep::journal::attrs::SEARCH;
use crate::sweep::journal::replay::Journal;
use crate::sweep::journal::worker_id::worker_id;
use crate::sweep::plan::{check, read_plan, SearchPlan};
use crate::train::run_dir;

/// The journal of a search alone, in its sweep directory `dir`.
pub fn journal_of(dir: &Path) -> Result<String, Error> {
    let path = dir.join("journal.log");
    // Appended to, and cut back to its last whole record, only inside the search's directory.
    crate::record::names::inside(dir, &path).map_err(|why| {
        Error::Sweep(SweepError::Plan {
            origin: path.display().to_string(),
            message: format!("{why}; nothing was read or changed"),
        })
    })?;
    Ok(crate::config::path_text("the sweep directory", &path)?)
}

/// Where the study of the sweep directory `dir` is, and its name: the storage and the study
/// its `study.json` names (a worker's directory of a shared study), else its own `journal.log`
/// and the study named after its `config.toml`'s `run.name`.
pub fn study_of(dir: &Path) -> Result<(String, String), Error> {
    let marker = dir.join("study.json");
    if let Ok(text) = std::fs::read_to_string(&marker) {
        let json: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| Error::io(&marker, std::io::Error::other(e.to_string())))?;
        let text = |k: &str| json[k].as_str().unwrap_or_default().to_string();
        return Ok((text("storage"), text("study")));
    }
    let spec = journal_of(dir)?;
    let path = dir.join("config.toml");
    let config = std::fs::read_to_string(&path).unwrap_or_default();
    let table: toml::Table = toml::from_str(&config).unwrap_or_default();
    let name = (table.get("run").and_then(|r| r.get("name"))).and_then(|n| n.as_str());
    let Some(name) = name else {
        let message = "no run.name, which names the search's study in its journal";
        return Err(RecordError::corrupt(&path, None, message).into());
    };
    Ok((spec, name.to_string()))
}

/// The search that study `name` of the journal at `spec` keeps for the sweep directory `dir`.
/// A journal that is missing, or holds no such study, is refused, naming it: as one that lost
/// the trials that trained here ([`refuse_lost`]), else as a search that stopped before it
/// began, which nothing can go on from.
pub fn recorded(dir: &Path, spec: &str, name: &str) -> Result<SearchPlan, Error> {
    if let Some(plan) = planned(dir, spec, name)? {
        return Ok(plan);
    }
    // Which trials trained needs no metric: a trial that trained has a checkpoint or a
    // validation loss.
    let searched = Searched {
        name,
        spec,
        monitor: defaults::MONITOR,
        interval: None,
    };
    refuse_lost(dir, &searched, || Ok(Journal::default()))?;
    let holds = match missing(spec) {
        true => "is missing",
        false => "holds no study of this search",
    };
    Err(refused(
        spec,
        format!(
            "{holds} ({name}, its run.name): the search's state, without which it cannot go on; \
             it trained no trial here, so start it again"
        ),
    ))
}

/// The search study `name` of the journal at `spec` keeps for `dir`, if the journal holds
/// that study yet: a worker that has just named the study in `dir` may not have begun it.
fn planned(dir: &Path, spec: &str, name: &str) -> Result<Option<SearchPlan>, Error> {
    let journal = match missing(spec) {
        true => Journal::default(),
        false => Storage::whole(spec, &worker_id())?,
    };
    let Some(study) = journal.study(name) else {
        return Ok(None);
    };
    let plan = match journal.studies[study].system_attrs.get(SEARCH) {
        Some(value) => {
            let plan = serde_json::from_value::<SearchPlan>(value.clone()).map_err(|e| {
                refused(
                    spec,
                    format!("{SEARCH} of study {name} is not a search: {e}"),
                )
            })?;
            check(&plan, Path::new(spec), &format!("{SEARCH} of study {name}"))?;
            plan
        }
        // A study whose journal an earlier tidemark wrote: its search is in plan.json alone.
        None => read_plan(dir)?.search.ok_or_else(|| {
            refused(
                spec,
                format!(
                    "study {name} keeps no search, and {} is a sweep of runs",
                    dir.join("plan.json").display()
                ),
            )
        })?,
    };
    Ok(Some(plan))
}

/// The sweep directory a study's workers share: created by the first, and refused if it holds
/// a search with other trials, as the journal it names records that search (its `study.json`'s
/// storage, or its own `journal.log`).
pub(in crate::sweep) fn shared_dir(dir: &Path, plan: &SearchPlan) -> Result<PathBuf, Error> {
    run_dir::make_output_dir(dir)?;
    let other = |p: &SearchPlan| (&p.trials, &p.monitor) != (&plan.trials, &plan.monitor);
    let has = |name: &str| dir.join(name).is_file();
    // A journal alone is a shard's storage, opened before anything was planned here.
    let other = if has("study.json") || (has("journal.log") && has("config.toml")) {
        let (spec, name) = study_of(dir)?;
        // None: a worker named the study here and has not begun it yet.
        planned(dir, &spec, &name)?.is_some_and(|p| other(&p))
    } else if dir.join("plan.json").is_file() {
        // A sweep an earlier tidemark wrote without a journal (a sweep of runs).
        read_plan(dir)?.search.is_none_or(|p| other(&p))
    } else {
        false
    };
    if other {
        return Err(Error::Sweep(SweepError::Plan {
            origin: dir.display().to_string(),
            message: "holds a sweep with other trials; the workers of one search \
                      share its directory, so give this search another run.name or \
                      run.output_dir"
                .into(),
        }));
    }
    Ok(dir.to_path_buf())
}

/// Whether the journal file `spec` is missing (a server's journal never is, here).
fn missing(spec: &str) -> bool {
    !spec.contains("://") && !Path::new(spec).is_file()
}

fn refused(spec: &str, message: String) -> Error {
    Error::Sweep(SweepError::Plan {
        origin: spec.to_string(),
        message,
    })
}
