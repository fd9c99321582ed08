//! A search's entries, each a worker of a study: [`work`] (`tidemark sweep --storage`, one
//! worker of a study any number share: it joins the study, creating it if it is the first),
//! [`search_alone`] (a search in this process, a study of one worker whose journal is in its
//! sweep directory) and [`rejoin_alone`] (its `--resume`). Each checks what it is given, picks
//! the runner its plan asks for (this process, or children under leases) and runs the one loop
//! ([`drive`](super::drive)) until every trial of the study has finished; then it ranks the
//! study's trials and writes them. A signal hands the runner's trials back (WAITING, from their
//! latest checkpoints) for the next worker to take.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::drive::until_done;
use super::held::Held;
use super::joined::{keep, search_record, Study};
use super::lost::{check_checkpoints, refuse_lost, Searched};
use super::population::check_exploits;
use super::recorded::{journal_of, shared_dir};
use super::report::ranked;
use super::slots::Slots;
use super::storage::Storage;
use super::trial::{InProcess, Training};
use crate::config::{to_toml, RunConfig};
use crate::error::Error;
use crate::kinds::Kinds;
use crate::record::RunSummary;
use crate::record::{write_atomic, Observer};
use crate::sweep::checks::check_search;
use crate::sweep::journal::attrs::{NUMBER, RETRY_OF, SEARCH};
use crate::sweep::journal::op::{now, Op, State};
use crate::sweep::journal::replay::{Journal, TrialRecord};
use crate::sweep::journal::worker_id::worker_id;
use crate::sweep::parallel::processes::Launch;
use crate::sweep::parallel::trials::{threads_per_child, trial_exe};
use crate::sweep::plan::{write_plan, Plan, SearchPlan};
use crate::sweep::results::TrialRow;
use crate::sweep::search::plan_of;
use crate::sweep::signals::StopOnSignal;
use crate::sweep::sizing::budget::resolve;
use crate::sweep::sizing::lease::no_lease_fits;
use crate::sweep::sizing::preflight::arrange;
use crate::sweep::space::{Order, Space, Trial};
use crate::sweep::trial_config::{checked_trial_config, TrialBuild};
use crate::train::run_dir;
use std::collections::BTreeMap;

/// Works on the study of `config`'s search in `storage` until it is done; returns this
/// worker's sweep directory and every trial of the study, ranked. `observer(i, n)` watches
/// trial `i` of `n`, `observer(0, n)` the study.
pub fn work(
    kinds: &Kinds,
    config: &RunConfig,
    space: &Space,
    storage: &str,
    observer: impl FnMut(usize, usize) -> Box<dyn Observer>,
) -> Result<(PathBuf, Vec<TrialRow>), Error> {
    // As a run's: its `config.toml` holds `[model]` as the kind reads it, defaults filled in.
    let config = &kinds.resolved(config)?;
    check_search(kinds, config, space)?;
    let plan = plan_of(space);
    let sweep = format!("{}-sweep", config.run.name);
    // The storage first, read: one that cannot be opened or read (a server that wants a
    // password, a key of another type, a record that is not JSON) leaves no sweep directory.
    let mut opened = Storage::open(storage, &worker_id())?.lean(keep(space));
    opened.sync()?;
    let dir = shared_dir(&config.run.output_dir.join(sweep), &plan)?;
    // A shared directory's trials trained as the study recorded them, or the study lost them.
    let searched = searched(config, space, storage);
    refuse_lost(&dir, &searched, || Storage::whole(storage, &worker_id()))?;
    // The marker first: a worker that finds the plan finds the study it belongs to.
    write_marker(&dir, storage, &config.run.name)?;
    write_search(&dir, config, &plan)?;
    let rows = run(kinds, config, (space, &plan), &dir, opened, observer)?;
    Ok((dir, rows))
}

/// A search in this process alone (no `--storage`): a study of one worker, whose storage is
/// `journal.log` in its new sweep directory, `<output_dir>/<name>-sweep/` (or `-2`, ...).
pub fn search_alone(
    kinds: &Kinds,
    config: &RunConfig,
    space: &Space,
    observer: impl FnMut(usize, usize) -> Box<dyn Observer>,
) -> Result<(PathBuf, Vec<TrialRow>), Error> {
    let config = &kinds.resolved(config)?;
    check_search(kinds, config, space)?;
    let plan = plan_of(space);
    let dir = run_dir::create(
        &config.run.output_dir,
        &format!("{}-sweep", config.run.name),
    )?;
    write_search(&dir, config, &plan)?;
    let opened = Storage::open(&journal_of(&dir)?, &worker_id())?.lean(keep(space));
    let rows = run(kinds, config, (space, &plan), &dir, opened, observer)?;
    Ok((dir, rows))
}

/// The search alone in `dir` rejoined (`sweep --resume`): a trial its stopped process left
/// running goes on first, from its checkpoint.
pub fn rejoin_alone(
    kinds: &Kinds,
    config: &RunConfig,
    space: &Space,
    dir: &Path,
    observer: impl FnMut(usize, usize) -> Box<dyn Observer>,
) -> Result<Vec<TrialRow>, Error> {
    // Every file the search goes on from is read before anything is written: its trials'
    // latest checkpoints, and its journal.
    check_checkpoints(dir)?;
    // The journal is the search's state: one that lost what its trials trained is refused,
    // naming it, before anything is decided or written (one removed is not made anew).
    let spec = journal_of(dir)?;
    let name = &config.run.name;
    let searched = searched(config, space, &spec);
    if !dir.join("journal.log").is_file() {
        refuse_lost(dir, &searched, || Ok(Journal::default()))?;
    }
    let mut storage = Storage::open(&spec, &worker_id())?.lean(keep(space));
    let journal = refuse_lost(dir, &searched, || {
        Storage::whole(storage.spec(), storage.worker())
    })?;
    if let Some(study) = journal.study(name) {
        check_exploits(&journal, study, &spec)?;
    }
    // A population's failed member stays failed: its intervals were decided without it, and a
    // member trained again from its start would join decisions already made.
    let reopened = match journal.study(&config.run.name) {
        Some(study) if space.pbt.is_none() => reopen(&journal, study, dir, config.train.epochs)?,
        _ => Vec::new(),
    };
    // The search as this resume goes on with it (its trials at once, its budget) is the
    // journal's; plan.json shows it.
    let plan = plan_of(space);
    let mut ops = reopened;
    if let Some(study) = journal.study(&config.run.name) {
        let search = search_record(study, &plan);
        if let Op::StudySystemAttr { value, .. } = &search {
            if journal.studies[study].system_attrs.get(SEARCH) != Some(value) {
                ops.push(search);
            }
        }
    }
    write_plan(dir, &Plan::search(plan.clone()))?;
    storage.append(&ops)?;
    run(kinds, config, (space, &plan), dir, storage, observer)
}

/// What a search alone's resume trains again, read from its trials' own files before anything
/// is written (a summary that cannot be read stops it, naming the file): a trial whose last run
/// failed, whose summary is gone, or that completed fewer epochs than the config asks now. The
/// journal cannot reopen a finished trial (Optuna ignores changes to one), so each is a new
/// trial of its number, waiting, which the worker takes first, as Optuna's
/// `RetryHeartbeatStaleTrialCallback` adds a waiting copy; rows take the last of a number.
fn reopen(journal: &Journal, study: usize, dir: &Path, epochs: usize) -> Result<Vec<Op>, Error> {
    let mut last: BTreeMap<usize, (usize, &TrialRecord)> = BTreeMap::new();
    for &id in &journal.studies[study].trials {
        let t = &journal.trials[&id];
        if let Some(n) = t.number {
            last.insert(n, (id, t));
        }
    }
    let mut again = Vec::new();
    for (&n, &(id, t)) in &last {
        if !t.state.finished() {
            continue;
        }
        let name = Trial::name_of(n);
        let summary = RunSummary::read(&dir.join(name))?;
        let short = summary.as_ref().is_none_or(|s| s.epochs < epochs);
        let redo = match t.state {
            State::Fail => true,
            State::Complete => short,
            _ => false,
        };
        if redo {
            again.push((n, id, t));
        }
    }
    let mut ops = Vec::new();
    for (i, (n, old, t)) in again.into_iter().enumerate() {
        let id = journal.made + i;
        let mut set: Vec<Op> = (t.params.iter())
            .map(|(name, (internal, distribution))| Op::Param {
                trial: id,
                name: name.clone(),
                internal: *internal,
                distribution: distribution.clone(),
            })
            .collect();
        let attr = |key: &str, value: serde_json::Value| Op::SystemAttr {
            trial: id,
            key: key.into(),
            value,
        };
        set.push(attr(NUMBER, serde_json::json!(n)));
        let ended = match t.state {
            State::Fail => "failed",
            _ => "completed",
        };
        set.push(attr(
            RETRY_OF,
            serde_json::json!({"trial": old, "ended": ended}),
        ));
        ops.extend(Op::create_whole(study, now(), set));
        ops.push(Op::State {
            trial: id,
            state: State::Waiting,
            values: None,
            at: now(),
        });
    }
    Ok(ops)
}

/// What [`refuse_lost`] checks a search's trials against: its study in the journal at `spec`.
fn searched<'a>(config: &'a RunConfig, space: &'a Space, spec: &'a str) -> Searched<'a> {
    Searched {
        name: &config.run.name,
        spec,
        monitor: space.monitor.name(),
        interval: space.pbt.as_ref().map(|p| p.interval),
    }
}

/// A search's `config.toml` and `plan.json` in its sweep directory `dir`.
fn write_search(dir: &Path, config: &RunConfig, plan: &SearchPlan) -> Result<(), Error> {
    let path = dir.join("config.toml");
    write_atomic(&path, to_toml(config).as_bytes()).map_err(|e| Error::io(&path, e))?;
    write_plan(dir, &Plan::search(plan.clone()))
}

/// Works on the study of `space` in `opened` from the sweep directory `dir` until it is done;
/// every trial of the study, ranked (and written: `sweep.json`, `sweep.md`, `sweep.svg`).
fn run(
    kinds: &Kinds,
    config: &RunConfig,
    (space, plan): (&Space, &SearchPlan),
    dir: &Path,
    opened: Storage,
    mut observer: impl FnMut(usize, usize) -> Box<dyn Observer>,
) -> Result<Vec<TrialRow>, Error> {
    let dir = dir.to_path_buf();
    let storage = Arc::new(Mutex::new(opened));
    let (mut study, me) = join(&storage, config, (space, plan), &mut observer)?;
    // A default that depends on a varied key is each trial's own.
    let base = to_toml(&config.unresolved());
    let check = |c: &mut RunConfig| kinds.resolve(c);
    let config_of = |t: &Trial| checked_trial_config(&base, t, &dir, &check).map_err(Error::Config);
    let stop = StopOnSignal::install()?;
    let build = TrialBuild {
        kinds,
        config: &config_of,
    };
    // The order its trials are created in: its first worker probes them. Packed, the probes
    // give the leases too: a budget smaller than every one is refused before any trial trains.
    let budget = packed_budget(plan, config)?;
    // The leases the order's probes measured, which this worker's slots take as they are
    // (a probe on a device with pools compiles its kernels: once is enough).
    let mut probed: BTreeMap<usize, u64> = BTreeMap::new();
    let arranged = |planned: &[Trial]| {
        let todo = planned.iter().collect();
        let (order, observer) = (Order::LargestFirst, &mut *observer(0, planned.len()));
        let leases = budget.is_some();
        let stop = Some(stop.flag());
        let arranged = arrange(todo, build, (order, leases), &dir, observer, stop)?;
        if let Some(budget) = budget {
            no_lease_fits(&arranged, budget)?;
        }
        let leases = arranged.iter().filter_map(|(t, l)| Some((t.number, (*l)?)));
        probed.extend(leases);
        Ok(arranged.into_iter().map(|(t, _)| t.number).collect())
    };
    study.settle_order(&mut storage.lock().expect("storage"), arranged)?;
    let monitor = space.monitor.name();
    let mut said = observer(0, study.trials());
    match plan.packing.parallel {
        1 => {
            let mut runner = InProcess {
                training: Training {
                    storage: &storage,
                    study: study.id,
                    build,
                    monitor,
                    stop: stop.shared(),
                },
                study: &study,
                dir: &dir,
                observer: &mut observer,
            };
            until_done(&mut runner, &study, &storage, stop.flag(), &mut *said)?
        }
        parallel => {
            let budget = budget.expect("packed");
            let spec = storage.lock().expect("storage").spec().to_string();
            let held = Held::new(&storage, &dir, study.id, (budget, parallel))?;
            let mut runner = Slots {
                storage: &storage,
                study: &study,
                build,
                monitor,
                dir: &dir,
                budget,
                parallel,
                fit: plan.packing.fit_in_lease,
                probed: &probed,
                launch: Launch {
                    exe: trial_exe()?,
                    threads: threads_per_child(parallel),
                    storage: spec,
                },
                held,
            };
            said.message(&runner.said());
            until_done(&mut runner, &study, &storage, stop.flag(), &mut *said)?
        }
    }
    let spec = storage.lock().expect("storage").spec().to_string();
    // The rows from the whole journal: the worker's own reading let finished trials go.
    let rows = ranked(&Storage::whole(&spec, &me)?, study.id, &spec, &dir, plan)?;
    // A signal at the very end still says so: the results are whole, and a resume says so.
    if stop.flag().load(Ordering::SeqCst) {
        return Err(Error::Interrupted);
    }
    drop(stop);
    Ok(rows)
}

/// The budget a packed worker's leases share (`sweep.parallel > 1`), or `None` for a worker
/// that trains its trials on this thread, one at a time: where `App::run` allowed it, the
/// thread then becomes one of the compute threads, before a probe or a trial uses them.
fn packed_budget(plan: &SearchPlan, config: &RunConfig) -> Result<Option<u64>, Error> {
    match plan.packing.parallel {
        1 => {
            crate::backend::threads::join_if_training_here();
            Ok(None)
        }
        _ => resolve(&plan.packing, config).map(Some),
    }
}

/// Joins the study of `space` in `storage`, and says so; the study, and this worker's id.
fn join(
    storage: &Mutex<Storage>,
    config: &RunConfig,
    searched: (&Space, &SearchPlan),
    observer: &mut impl FnMut(usize, usize) -> Box<dyn Observer>,
) -> Result<(Study, String), Error> {
    let mut locked = storage.lock().expect("storage");
    let epochs = config.train.epochs;
    let study = Study::join(&mut locked, &config.run.name, searched, epochs)?;
    let me = locked.worker().to_string();
    let line = format!(
        "worker {me} joined study {} ({} trials) in {}",
        study.name,
        study.trials(),
        locked.spec()
    );
    drop(locked);
    observer(0, study.trials()).message(&line);
    Ok((study, me))
}

/// Writes `study.json` in the worker's directory `dir`: `sweep --resume` on it is refused,
/// and says how to rejoin the study `name` in `storage` instead.
fn write_marker(dir: &Path, storage: &str, name: &str) -> Result<(), Error> {
    let named = match storage.contains("://") {
        true => storage.to_string(),
        false => {
            std::path::absolute(storage).map_or(storage.to_string(), |p| p.display().to_string())
        }
    };
    let marker = serde_json::json!({"storage": named, "study": name});
    Ok(crate::record::write_json(&dir.join("study.json"), &marker)?)
}
