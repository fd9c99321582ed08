//! `tidemark sweep --storage STORAGE`: this process as one worker of a study that any number
//! of workers share. It joins the study (creating it if it is the first), then takes one piece
//! of work after another from it ([`next`](super::next)) and trains it in its own sweep
//! directory, beating for its trial, until every trial of the study has finished. A signal
//! hands its trial back (WAITING, from its latest checkpoint) for the next worker to take.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::heartbeat::Heartbeat;
use super::joined::Study;
use super::next::{next, Beats, From, Work};
use super::rows::rows;
use super::storage::Storage;
use super::trial::Training;
use super::worker_id::worker_id;
use crate::config::{to_toml, ConfigError, RunConfig};
use crate::error::Error;
use crate::kinds::Kinds;
use crate::record::{write_atomic, Observer};
use crate::sweep::checks::check_search;
use crate::sweep::plan::{write_plan, Plan};
use crate::sweep::results::{rank, TrialRow};
use crate::sweep::search::{plan_of, shared_dir, write_results};
use crate::sweep::signals::StopOnSignal;
use crate::sweep::space::{PruneMethod, Space};
use crate::sweep::trial_config::{checked_trial_config, TrialBuild};

/// Works on the study of `config`'s search in `storage` until it is done; returns this
/// worker's sweep directory and every trial of the study, ranked. `observer(i, n)` watches
/// trial `i` of `n`, `observer(0, n)` the study.
pub fn work(
    kinds: &Kinds,
    config: &RunConfig,
    space: &Space,
    storage: &str,
    mut observer: impl FnMut(usize, usize) -> Box<dyn Observer>,
) -> Result<(PathBuf, Vec<TrialRow>), Error> {
    refuse_unsupported(space, storage)?;
    check_search(kinds, config, space, None)?;
    let plan = plan_of(space);
    let dir = shared_dir(
        &config
            .run
            .output_dir
            .join(format!("{}-sweep", config.run.name)),
        &plan,
    )?;
    let path = dir.join("config.toml");
    write_atomic(&path, to_toml(config).as_bytes()).map_err(|e| Error::io(&path, e))?;
    write_plan(&dir, &Plan::search(plan.clone()))?;
    let storage = Arc::new(Mutex::new(Storage::open(storage, &worker_id())?));
    let epochs = config.train.epochs;
    let mut locked = storage.lock().expect("storage");
    let study = Study::join(&mut locked, &config.run.name, space, epochs)?;
    drop(locked);
    let n = study.trials;
    let me = storage.lock().expect("storage").worker().to_string();
    observer(0, n).message(&format!(
        "worker {me} joined study {} ({} trials) in {}",
        study.name,
        n,
        storage.lock().expect("storage").spec()
    ));
    let base = to_toml(config);
    let check = |c: &RunConfig| kinds.check(c);
    let config_of = |t: &crate::sweep::space::Trial| {
        checked_trial_config(&base, t, &dir, &check).map_err(Error::Config)
    };
    let stop = StopOnSignal::install()?;
    let training = Training {
        storage: &storage,
        build: TrialBuild {
            kinds,
            config: &config_of,
        },
        monitor: space.monitor.name(),
        stop: stop.shared(),
    };
    let heartbeat = Heartbeat::start(Arc::clone(&storage), study.heartbeat);
    let mut beats = Beats::default();
    loop {
        if stop.flag().load(Ordering::SeqCst) {
            return Err(Error::Interrupted);
        }
        let work = (storage.lock().expect("storage"))
            .transact(|journal, worker| next(journal, &study, worker, &mut beats))?;
        match work {
            Work::Train {
                id,
                trial,
                from,
                pause_at,
            } => {
                let line = match from {
                    From::New => {
                        created_by_me(&storage, id, &me)?;
                        format!("{} started: {}", trial.name(), trial.describe())
                    }
                    From::HandedBack => format!(
                        "{} taken up where a stopped worker handed it back",
                        trial.name()
                    ),
                    From::Promoted(rung) => format!(
                        "{} goes on: it ranks high enough at its rung (epoch {rung})",
                        trial.name()
                    ),
                    From::Silent(w) => format!(
                        "{} taken over from worker {w}, silent for over {} s",
                        trial.name(),
                        study.grace.as_secs_f64()
                    ),
                };
                observer(0, n).message(&line);
                heartbeat.beat_for(Some(id));
                let ran = training.run(id, &trial, &dir, pause_at, observer(trial.number, n));
                heartbeat.beat_for(None);
                let (_, recorded) = ran?;
                if !recorded {
                    let line = format!(
                        "{} was taken over by another worker, whose result it is",
                        trial.name()
                    );
                    observer(0, n).message(&line);
                }
            }
            Work::Wait => wait(&stop, study.heartbeat.min(Duration::from_secs(1))),
            Work::Done => break,
        }
    }
    drop(heartbeat);
    let journal = storage.lock().expect("storage").sync()?.clone();
    let mut rows = rows(&journal, study.id);
    rank(&mut rows, plan.mode);
    write_results(&dir, &plan, &rows)?;
    drop(stop);
    Ok((dir, rows))
}

/// Checks that trial `id`, which this worker created under the lock, is its own: a writer that
/// appends without the lock (an Optuna process, say) could have taken the id first.
fn created_by_me(storage: &Mutex<Storage>, id: usize, me: &str) -> Result<(), Error> {
    let mut storage = storage.lock().expect("storage");
    let spec = storage.spec().to_string();
    let journal = storage.sync()?;
    let creator = journal
        .trials
        .get(id)
        .map_or("nobody", |t| t.creator.as_str());
    match creator == me {
        true => Ok(()),
        false => Err(Error::Config(ConfigError {
            origin: spec,
            key: None,
            message: format!(
                "trial id {id} was created by {creator}, which wrote without the journal's \
                 lock; only tidemark workers may add trials to a tidemark study"
            ),
        })),
    }
}

/// Sleeps for `time`, or until a signal.
fn wait(stop: &StopOnSignal, time: Duration) {
    let start = Instant::now();
    while start.elapsed() < time && !stop.flag().load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What a worker does not do yet: prune (each worker would rank its rungs alone), or train
/// several trials at once.
fn refuse_unsupported(space: &Space, storage: &str) -> Result<(), Error> {
    let fail = |key: &str, message: &str| {
        Err(Error::Config(ConfigError {
            origin: format!("--storage {storage}"),
            key: Some(key.into()),
            message: format!("{key}: {message}"),
        }))
    };
    if space.prune.is_some_and(|p| p.method != PruneMethod::Asha) {
        return fail(
            "sweep.prune.method",
            "a shared study prunes with ASHA only (the median rule is not built across \
             workers); set method = \"asha\", or search on one machine",
        );
    }
    if space.packing.parallel > 1 {
        return fail(
            "sweep.parallel",
            "a worker of a shared study trains one trial at a time; start one worker per trial \
             slot instead",
        );
    }
    Ok(())
}
