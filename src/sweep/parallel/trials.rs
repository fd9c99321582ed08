//! A search's trials in child processes: which to run, with which binary and how many rayon
//! workers each, under the scheduler ([`parallel`](super::scheduler)).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use super::processes::Launch;
use super::scheduler::Chosen;
use super::scheduler::Pack;
use super::state::Ended;
use super::timeline;
use crate::config::ConfigError;
use crate::error::Error;
use crate::memory::format_bytes;
use crate::record::Observer;
use crate::sweep::prune::Pruner;
use crate::sweep::sizing::lease::Arranged;
use crate::sweep::tpe_draws::Draws;
use crate::sweep::trial_config::TrialBuild;
use crate::sweep::trial_run::TrialErrors;

/// How a search packs its trials: at once, under what, and whether a trial fits its
/// micro-batch in its lease.
#[derive(Debug, Clone, Copy)]
pub(in crate::sweep) struct Packed {
    /// Trials at once.
    pub parallel: usize,
    /// The budget, in bytes.
    pub budget: u64,
    /// `memory.on_limit = "fit"` inside the leases.
    pub fit: bool,
}

/// Trains `todo` in child processes under `packed`, each with the config `config` builds for
/// it when it starts, and returns each trial with its error if it failed. A trial that
/// finished before (a resumed search) is not run again. `stop` is the flag the caller's
/// signal handlers set (installed before the probes, so that no signal falls between).
fn train_packed<'a>(
    dir: &Path,
    packed: Packed,
    todo: Vec<Arranged<'a>>,
    build: TrialBuild<'_>,
    observer: &mut dyn Observer,
    (mut pruner, draws): (Option<&mut Pruner>, Option<&mut Draws>),
    stop: &AtomicBool,
) -> Result<Vec<Ended<'a>>, Error> {
    let mut ended = Vec::new();
    let mut unfinished = Vec::new();
    for (trial, lease) in todo {
        let run_dir = dir.join(trial.name());
        match crate::sweep::trial_run::finished(&run_dir, build.config(trial)?.train.epochs)? {
            Some(_) => {
                // A trial that finished after the pruner last heard of it (a stopped search).
                if let Some(p) = pruner.as_deref_mut() {
                    p.ended(trial.number, &run_dir, false)?;
                }
                ended.push((trial, None));
            }
            None => unfinished.push((trial, lease)),
        }
    }
    if unfinished.is_empty() {
        return Ok(ended);
    }
    let pack = Pack {
        kinds: build.kinds.clone(),
        budget: packed.budget,
        parallel: packed.parallel,
        dir: dir.to_path_buf(),
        fit: packed.fit,
        launch: Launch {
            exe: trial_exe()?,
            threads: threads_per_child(packed.parallel),
        },
        schedule: timeline::path(dir),
        in_order: draws.is_some(),
    };
    observer.message(&format!(
        "{} trials, {} at once, under a budget of {}",
        unfinished.len(),
        packed.parallel,
        format_bytes(packed.budget)
    ));
    let chosen = Chosen { pruner, draws };
    ended.extend(pack.run(unfinished, build.config, stop, observer, chosen)?);
    Ok(ended)
}

/// Rayon workers per child: the cores shared among the children, at least one each; `None`
/// where the environment sets `RAYON_NUM_THREADS` itself.
pub(in crate::sweep) fn threads_per_child(parallel: usize) -> Option<usize> {
    if std::env::var_os("RAYON_NUM_THREADS").is_some() {
        return None;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    Some((cores / parallel).max(1))
}

/// Whether this program's command line is a [`App`](crate::App)'s (the `tidemark` binary,
/// or a program of its own with its model kinds): its children run `<this program> trial`.
static RUNS_TRIALS: AtomicBool = AtomicBool::new(false);

/// Says that this program runs `trial LAUNCH_FILE` as an [`App`](crate::App) does: a
/// parallel search's children run this program, with its model kinds.
pub fn runs_trials() {
    RUNS_TRIALS.store(true, Ordering::SeqCst);
}

/// The program the children run: `TIDEMARK_BIN`, or this process's own where it runs trials
/// (an app's command line), run as `/proc/self/exe`, the file it was started from even if a
/// rebuild has replaced it since. A program that searches in parallel through the library
/// sets the former to an app built on [`App`](crate::App) with its kinds.
pub(in crate::sweep) fn trial_exe() -> Result<PathBuf, Error> {
    if let Some(bin) = std::env::var_os("TIDEMARK_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let exe =
        std::env::current_exe().map_err(|e| Error::io(Path::new("the running program"), e))?;
    let name = exe.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    match RUNS_TRIALS.load(Ordering::SeqCst) || name.starts_with("tidemark") {
        true => Ok(PathBuf::from("/proc/self/exe")),
        false => Err(Error::Config(ConfigError {
            origin: exe.display().to_string(),
            key: Some("sweep.parallel".into()),
            message: "sweep.parallel: trials in parallel run in child processes of a program \
                      whose command line is tidemark::App (the tidemark binary, or an \
                      app's with its model kinds), and this program is not one; set \
                      TIDEMARK_BIN to such a program"
                .into(),
        })),
    }
}

/// `mine` in child processes under `packed`, until the last has ended or a signal has set
/// `stop`; each trial's error, if its last run failed.
pub(in crate::sweep) fn train_parallel(
    dir: &Path,
    packed: Packed,
    mine: Vec<Arranged>,
    build: TrialBuild<'_>,
    observer: &mut dyn Observer,
    chosen: (Option<&mut Pruner>, Option<&mut Draws>),
    stop: &AtomicBool,
) -> Result<TrialErrors, Error> {
    let ended = train_packed(dir, packed, mine, build, observer, chosen, stop)?;
    let mut errors = BTreeMap::new();
    // In the order the runs ended: a trial's later run clears an earlier run's error.
    for (trial, error) in ended {
        match error {
            Some(e) => errors.insert(trial.number, e),
            None => errors.remove(&trial.number),
        };
    }
    Ok(errors)
}
