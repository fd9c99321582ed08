//! Trials in parallel under a memory budget (`[sweep] parallel`, `budget`). Each trial runs in
//! a child process ([`children`](super::children)) whose `memory.limit` is its lease
//! ([`lease`](super::lease)); a trial starts only when its lease fits in what the running
//! trials leave of the budget, the largest that fits first. A trial whose lease is larger than
//! the whole budget fails before it trains, a child that dies is recorded with its reason and
//! the search goes on, and SIGINT or SIGTERM stops every child (each keeps its latest
//! checkpoint, for `sweep --resume`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::children::{Child, Launch};
use super::lease::{next, too_large};
use super::preflight::Arranged;
use super::schedule::{now, Schedule, Slot};
use super::shard::Shard;
use super::space::Trial;
use crate::config::{ConfigError, RunConfig};
use crate::error::Error;
use crate::memory::format_bytes;
use crate::record::Observer;

/// How often the children are looked at.
const POLL: Duration = Duration::from_millis(20);

/// What ended a trial of a parallel search: `None` if its child exited 0 (its summary says
/// the rest), else why it failed.
pub(super) type Ended<'a> = (&'a Trial, RunConfig, Option<String>);

/// A trial's child, with what it holds of the budget.
struct Running<'a> {
    trial: &'a Trial,
    cfg: RunConfig,
    lease: u64,
    child: Child,
    started: f64,
}

/// The search's packing: the budget, how many at once, and how a child starts.
pub(super) struct Pack<'p> {
    pub budget: u64,
    pub parallel: usize,
    pub launch: Launch,
    pub schedule: &'p Path,
}

impl Pack<'_> {
    /// Trains `todo` (in the order to prefer on equal leases) under the budget, and returns
    /// how each ended, in the order they ended.
    pub fn run<'a>(
        &self,
        todo: Vec<Arranged<'a>>,
        stop: &AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<Vec<Ended<'a>>, Error> {
        let mut schedule = Schedule::read_or_new(self.schedule);
        schedule.budget_bytes = self.budget;
        schedule.parallel = self.parallel;
        let mut ended = Vec::new();
        let mut waiting = Vec::new();
        for (trial, cfg, lease) in todo {
            match lease {
                Some(lease) if lease > self.budget => {
                    let reason = too_large(lease, self.budget);
                    observer.message(&format!(
                        "{} failed before training: {reason}",
                        trial.name()
                    ));
                    ended.push((trial, cfg, Some(reason)));
                }
                // A trial that could not be probed runs alone, where its own run reports why.
                lease => waiting.push((trial, cfg, lease.unwrap_or(self.budget))),
            }
        }
        let mut running: Vec<Running<'a>> = Vec::new();
        let driven = self.drive(
            &mut waiting,
            &mut running,
            &mut ended,
            &mut schedule,
            stop,
            observer,
        );
        if driven.is_err() {
            // No child outlives the search: on any error they stop at their checkpoints.
            self.stop_all(&mut running, &mut schedule, observer);
        }
        driven.map(|()| ended)
    }

    /// Starts trials as their leases fit and records them as they end, until none waits or
    /// runs, or `stop` is set.
    fn drive<'a>(
        &self,
        waiting: &mut Vec<(&'a Trial, RunConfig, u64)>,
        running: &mut Vec<Running<'a>>,
        ended: &mut Vec<Ended<'a>>,
        schedule: &mut Schedule,
        stop: &AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<(), Error> {
        loop {
            if stop.load(Ordering::SeqCst) {
                return Err(Error::Interrupted);
            }
            self.start_what_fits(waiting, running, schedule, observer)?;
            if running.is_empty() && waiting.is_empty() {
                return Ok(());
            }
            let mut i = 0;
            while i < running.len() {
                match running[i].child.exited()? {
                    Some(outcome) => {
                        let done = running.swap_remove(i);
                        let left = (&running[..], waiting.len());
                        ended.push(self.end(done, outcome.err(), left, schedule, observer)?);
                    }
                    None => i += 1,
                }
            }
            std::thread::sleep(POLL);
        }
    }

    /// Starts the largest waiting leases that fit in the budget left, up to `parallel`.
    fn start_what_fits<'a>(
        &self,
        waiting: &mut Vec<(&'a Trial, RunConfig, u64)>,
        running: &mut Vec<Running<'a>>,
        schedule: &mut Schedule,
        observer: &mut dyn Observer,
    ) -> Result<(), Error> {
        while running.len() < self.parallel {
            let leases: Vec<u64> = waiting.iter().map(|w| w.2).collect();
            let free = self.budget.saturating_sub(in_use(running));
            let Some(i) = next(&leases, free) else {
                return Ok(());
            };
            let (trial, cfg, lease) = waiting.remove(i);
            let limit = cfg
                .memory
                .limit
                .and_then(|l| l.resolve(None))
                .unwrap_or(u64::MAX);
            let child = self.launch.start(trial.number, lease.min(limit))?;
            let started = now();
            schedule.slots.insert(
                trial.number,
                Slot {
                    trial: trial.number,
                    lease_bytes: lease,
                    started_unix: started,
                    ended_unix: None,
                    pid: child.pid(),
                },
            );
            schedule.write(self.schedule)?;
            running.push(Running {
                trial,
                cfg,
                lease,
                child,
                started,
            });
            let line = format!(
                "{} started, lease {}; {}",
                trial.name(),
                format_bytes(lease),
                self.status(running, waiting.len())
            );
            observer.message(&line);
        }
        Ok(())
    }

    /// Records a child's end; `left`: the trials still running, and how many wait.
    fn end<'a>(
        &self,
        done: Running<'a>,
        error: Option<String>,
        (running, waiting): (&[Running<'a>], usize),
        schedule: &mut Schedule,
        observer: &mut dyn Observer,
    ) -> Result<Ended<'a>, Error> {
        let ended = now();
        if let Some(slot) = schedule.slots.get_mut(&done.trial.number) {
            slot.ended_unix = Some(ended);
        }
        schedule.write(self.schedule)?;
        let how = match &error {
            None => "completed".to_string(),
            Some(reason) => format!("failed: {reason}"),
        };
        observer.message(&format!(
            "{} {how} ({:.1} s); {}",
            done.trial.name(),
            ended - done.started,
            self.status(running, waiting)
        ));
        Ok((done.trial, done.cfg, error))
    }

    /// Stops every child (SIGTERM), waits for them, and records when they ended.
    fn stop_all(
        &self,
        running: &mut Vec<Running<'_>>,
        schedule: &mut Schedule,
        observer: &mut dyn Observer,
    ) {
        for r in running.iter() {
            r.child.terminate();
        }
        for r in running.iter_mut() {
            let _ = r.child.wait();
            if let Some(slot) = schedule.slots.get_mut(&r.trial.number) {
                slot.ended_unix = Some(now());
            }
        }
        let names: Vec<String> = running.drain(..).map(|r| r.trial.name()).collect();
        if !names.is_empty() {
            observer.message(&format!(
                "stopped {} at their latest checkpoints",
                names.join(", ")
            ));
        }
        // The search's own error is the one to report; a schedule that cannot be written now
        // keeps the times of the trials' starts.
        let _ = schedule.write(self.schedule);
    }

    /// `2 running (trial-003, trial-007), 24.6 MiB of 1.9 GiB leased; 9 waiting`.
    fn status(&self, running: &[Running<'_>], waiting: usize) -> String {
        let names: Vec<String> = running.iter().map(|r| r.trial.name()).collect();
        let waiting = match waiting {
            0 => String::new(),
            n => format!("; {n} waiting"),
        };
        let running = match names.len() {
            0 => "none running".to_string(),
            n => format!(
                "{n} running ({}), {} of {} leased",
                names.join(", "),
                format_bytes(in_use(running)),
                format_bytes(self.budget)
            ),
        };
        format!("{running}{waiting}")
    }
}

fn in_use(running: &[Running<'_>]) -> u64 {
    running.iter().map(|r| r.lease).sum()
}

/// A flag that SIGINT and SIGTERM set, for the rest of the process.
pub(super) fn stop_flag() -> Result<Arc<AtomicBool>, Error> {
    let flag = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&flag))
            .map_err(|e| Error::io(Path::new("a signal handler"), e))?;
    }
    Ok(flag)
}

/// Trains `todo` in child processes, `parallel` at once under `budget` (`fit`: on_limit
/// "fit" in the leases), and returns each trial
/// with its error if it failed. A trial that finished before (a resumed search) is not run
/// again.
pub(super) fn train_packed<'a>(
    dir: &Path,
    (parallel, budget, fit): (usize, u64, bool),
    shard: Option<Shard>,
    todo: Vec<Arranged<'a>>,
    observer: &mut dyn Observer,
) -> Result<Vec<(&'a Trial, Option<String>)>, Error> {
    let mut ended: Vec<(&Trial, Option<String>)> = Vec::new();
    let mut unfinished = Vec::new();
    for (trial, cfg, lease) in todo {
        match super::finished(&dir.join(trial.name()), cfg.train.epochs)? {
            Some(_) => ended.push((trial, None)),
            None => unfinished.push((trial, cfg, lease)),
        }
    }
    let todo = unfinished;
    if todo.is_empty() {
        return Ok(ended);
    }
    let schedule = super::schedule::path(dir, shard);
    let pack = Pack {
        budget,
        parallel,
        launch: Launch {
            exe: tidemark_exe()?,
            dir: dir.to_path_buf(),
            threads: threads_per_child(parallel),
            fit,
        },
        schedule: &schedule,
    };
    observer.message(&format!(
        "{} trials, {} at once, under a budget of {}",
        todo.len(),
        parallel,
        format_bytes(budget)
    ));
    let stop = stop_flag()?;
    let trained = pack.run(todo, &stop, observer)?;
    ended.extend(trained.into_iter().map(|(t, _, error)| (t, error)));
    Ok(ended)
}

/// Rayon workers per child: the cores shared among the children, at least one each; `None`
/// where the environment sets `RAYON_NUM_THREADS` itself.
fn threads_per_child(parallel: usize) -> Option<usize> {
    if std::env::var_os("RAYON_NUM_THREADS").is_some() {
        return None;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    Some((cores / parallel).max(1))
}

/// The `tidemark` binary the children run: `TIDEMARK_BIN`, or this process's own when it is
/// `tidemark` (a Rust program that searches in parallel through the library sets the former).
fn tidemark_exe() -> Result<PathBuf, Error> {
    if let Some(bin) = std::env::var_os("TIDEMARK_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let exe =
        std::env::current_exe().map_err(|e| Error::io(Path::new("the running program"), e))?;
    match exe.file_stem().and_then(|n| n.to_str()) {
        Some("tidemark") => Ok(exe),
        _ => Err(Error::Config(ConfigError {
            origin: "[sweep]".into(),
            key: Some("sweep.parallel".into()),
            message: format!(
                "sweep.parallel: trials in parallel run in child `tidemark` processes, and {} \
                 is not one; set TIDEMARK_BIN to the tidemark binary",
                exe.display()
            ),
        })),
    }
}
