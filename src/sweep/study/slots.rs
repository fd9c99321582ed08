//! A worker that packs its device (`sweep.parallel > 1` with `--storage`): it trains up to
//! `parallel` trials of the study at once, each in a child process whose `memory.limit` is its
//! lease, under the worker's own budget, as a parallel search on one machine does. It takes a
//! piece of work from the study ([`next`](super::next)) whenever a slot is free, probes the
//! trial's lease, and starts it once the lease fits in what its running trials leave of the
//! budget (the claimed trial waits, beating, till then). The children write their epochs to
//! the study themselves ([`child`](super::reporting::child)); the worker beats for all of
//! them and writes each one's end. A signal stops every child at its latest checkpoint and
//! hands its trial back. When each trial ran under which lease is written to the worker's own
//! `schedule-<worker>.json` in the sweep directory, as a parallel search writes `schedule.json`:
//! `sweep.json` then gives the leases, the budget and the trials at once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::ending::{ending, record, Outcome};
use super::heartbeat::Heartbeat;
use super::joined::Study;
use super::next::{take, Beats, Work};
use super::population::{carry_out, Prepare};
use super::reporting::Reports;
use super::storage::Storage;
use crate::config::RunConfig;
use crate::error::Error;
use crate::memory::format_bytes;
use crate::record::{Observer, RunStatus, RunSummary, RunningTrial, SearchStatus};
use crate::sweep::journal::op::State;
use crate::sweep::parallel::launch::write_launch;
use crate::sweep::parallel::processes::{Child, Launch};
use crate::sweep::parallel::timeline::Timeline;
use crate::sweep::sizing::lease::too_large;
use crate::sweep::sizing::preflight::lease_of;
use crate::sweep::space::Trial;
use crate::sweep::trial_config::TrialBuild;
use crate::train::preflight::warm_up;

/// `trial-007 pruned: ASHA: ...` for each trial the worker pruned at the study's end.
pub fn say_pruned(pruned: &[(usize, String)], observer: &mut dyn Observer) {
    for (number, why) in pruned {
        observer.message(&format!("trial-{number:03} pruned: {why}"));
    }
}

/// How often the children are looked at.
const POLL: Duration = Duration::from_millis(20);
/// How often the live view is told where the trials stand (besides at each start).
const SHOW_EVERY: Duration = Duration::from_millis(500);

/// A worker's device, packed.
pub struct Slots<'a> {
    pub storage: &'a Arc<Mutex<Storage>>,
    pub study: &'a Study,
    pub build: TrialBuild<'a>,
    pub monitor: &'a str,
    /// The worker's sweep directory.
    pub dir: &'a Path,
    /// What its running trials' leases may add up to.
    pub budget: u64,
    /// Trials at once.
    pub parallel: usize,
    /// `memory.on_limit = "fit"` inside the leases.
    pub fit: bool,
    /// The planned trials' leases this worker probed for the study's order, by number.
    pub probed: &'a BTreeMap<usize, u64>,
    /// How a child starts.
    pub launch: Launch,
}

/// A trial this worker claimed, probed, and will start once its lease fits.
struct Claimed {
    id: usize,
    trial: Trial,
    cfg: RunConfig,
    lease: u64,
    pause_at: Option<usize>,
}

/// A trial training in a child.
struct Running {
    id: usize,
    trial: Trial,
    lease: u64,
    child: Child,
    started: Instant,
}

/// The worker's trials: the one waiting for room, and those running.
#[derive(Default)]
struct Held {
    claimed: Option<Claimed>,
    running: Vec<Running>,
    /// When the study last had nothing to start: it is asked again after a pause.
    idle_since: Option<Instant>,
    /// Whether this process has its one-time state, which a lease counts.
    warm: bool,
    /// When each trial ran here, under which lease.
    timeline: Timeline,
    /// Its file (`schedule-<worker>.json`).
    schedule: PathBuf,
    /// When the live view was last told.
    shown: Option<Instant>,
}

impl Held {
    /// The trials to beat for.
    fn ids(&self) -> Vec<usize> {
        let running = self.running.iter().map(|r| r.id);
        running.chain(self.claimed.as_ref().map(|c| c.id)).collect()
    }

    /// The budget the running trials leave.
    fn free(&self, budget: u64) -> u64 {
        budget.saturating_sub(self.running.iter().map(|r| r.lease).sum())
    }
}

impl Slots<'_> {
    /// Takes and trains the study's work until none is left, or a signal sets `stop`; every
    /// trial still held is then handed back.
    pub fn until_done(&self, stop: &AtomicBool, observer: &mut dyn Observer) -> Result<(), Error> {
        let heartbeat = Heartbeat::start(Arc::clone(self.storage), self.study.heartbeat());
        observer.message(&format!(
            "up to {} trials at once on this device, under a budget of {}",
            self.parallel,
            format_bytes(self.budget)
        ));
        let mut held = Held {
            timeline: Timeline {
                budget_bytes: self.budget,
                parallel: self.parallel,
                ..Timeline::default()
            },
            schedule: self.schedule_path(),
            ..Held::default()
        };
        let worked = self.drive(&mut held, &heartbeat, stop, observer);
        if worked.is_err() {
            // Every child is stopped whatever the storage does; the first error is the one
            // told (a storage that failed fails the hand-back too).
            let handed = self.hand_back(&mut held, observer);
            return worked.and(handed);
        }
        worked
    }

    /// The loop: children that ended recorded, work taken while a slot is free, the claimed
    /// trial started once its lease fits.
    fn drive(
        &self,
        held: &mut Held,
        heartbeat: &Heartbeat,
        stop: &AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<(), Error> {
        let mut beats = Beats::default();
        let pause = self.study.heartbeat().min(Duration::from_secs(1));
        loop {
            if stop.load(Ordering::SeqCst) {
                return Err(Error::Interrupted);
            }
            self.reap(held, stop, observer)?;
            let asked = held.idle_since.is_some_and(|t| t.elapsed() < pause);
            if held.claimed.is_none() && held.running.len() < self.parallel && !asked {
                match take(self.storage, self.study, &mut beats)? {
                    Work::Train {
                        id,
                        trial,
                        from,
                        pause_at,
                        prepare,
                    } => {
                        observer.message(&from.said(&trial, self.study.grace()));
                        let claim = (id, trial, pause_at, prepare);
                        held.claimed = self.probe(claim, &mut held.warm, observer)?;
                        held.idle_since = None;
                    }
                    Work::Done(pruned) if held.running.is_empty() => {
                        say_pruned(&pruned, observer);
                        return Ok(());
                    }
                    Work::Wait | Work::Done(_) => held.idle_since = Some(Instant::now()),
                }
            }
            let free = held.free(self.budget);
            if let Some(claimed) = held.claimed.as_ref().filter(|c| c.lease <= free) {
                // Claimed until its child runs: a start that fails hands it back with the rest.
                let running = self.start(claimed, held, observer)?;
                let (trial, pid) = (running.trial.number, running.child.pid());
                held.timeline.started(trial, running.lease, pid);
                self.record(held, observer);
                held.claimed = None;
                held.running.push(running);
                self.show(held, observer)?;
            }
            if held.shown.is_none_or(|t| t.elapsed() >= SHOW_EVERY) {
                self.show(held, observer)?;
            }
            heartbeat.beat_for(held.ids());
            std::thread::sleep(POLL);
        }
    }

    /// Probes claimed trial `id` for its lease: it waits for room, or fails now (recorded) if
    /// it cannot be built or its lease is larger than the whole budget.
    fn probe(
        &self,
        (id, trial, pause_at, prepare): (usize, Trial, Option<usize>, Option<Prepare>),
        warm: &mut bool,
        observer: &mut dyn Observer,
    ) -> Result<Option<Claimed>, Error> {
        // A population's member makes the copy it goes on from first, or finds its own run.
        let prepared = prepare.map(|p| carry_out(self.storage, id, p, self.dir));
        let built = match prepared {
            Some(Err(e)) => Err(e),
            _ => self.build.config(&trial),
        };
        if let (Ok(cfg), false) = (&built, *warm) {
            // A lease counts what a fresh process holds before the step: its one-time state.
            warm_up(cfg)?;
            *warm = true;
        }
        // A planned trial (not one TPE drew) this worker probed for the order is not probed
        // again.
        let planned = self.study.planned(trial.number);
        let known = (self.probed.get(&trial.number))
            .filter(|_| planned.is_some_and(|p| p.values == trial.values));
        let lease = (built.as_ref().ok()).map(|cfg| match known {
            Some(&lease) => lease,
            None => lease_of(self.build.kinds, &trial, cfg).unwrap_or(self.budget),
        });
        let failed = match (&built, lease) {
            (Err(e), _) => e.to_string(),
            (Ok(_), Some(lease)) if lease > self.budget => too_large(lease, self.budget),
            (Ok(cfg), Some(lease)) => {
                let cfg = cfg.clone();
                return Ok(Some(Claimed {
                    id,
                    trial,
                    cfg,
                    lease,
                    pause_at,
                }));
            }
            (Ok(_), None) => unreachable!("a built config has a lease"),
        };
        observer.message(&format!(
            "{} failed before training: {failed}",
            trial.name()
        ));
        let ops = ending(id, &trial, self.monitor, &Outcome::Failed(failed), None);
        record(self.storage, id, ops)?;
        Ok(None)
    }

    /// Starts the claimed trial in a child, under its lease.
    fn start(
        &self,
        claimed: &Claimed,
        held: &Held,
        observer: &mut dyn Observer,
    ) -> Result<Running, Error> {
        let Claimed {
            id,
            trial,
            cfg,
            lease,
            pause_at,
        } = claimed;
        let (id, lease) = (*id, *lease);
        let run_dir = cfg.run.output_dir.join(&cfg.run.name);
        let gate = self.study.gate(*pause_at, &run_dir);
        let launch = write_launch(self.dir, trial, cfg, lease, self.fit, gate.as_ref())?;
        let worker = self.storage.lock().expect("storage").worker().to_string();
        let reports = Reports {
            storage: self.storage.lock().expect("storage").spec().to_string(),
            worker,
            trial: id,
            study: self.study.id,
            monitor: self.monitor.to_string(),
            pid: std::process::id(),
        };
        reports.write(&launch)?;
        crate::failpoint::pass("start");
        let child = self.launch.start(&launch)?;
        let free = held.free(self.budget).saturating_sub(lease);
        observer.message(&format!(
            "{} training, lease {}; {} running, {} of the budget free",
            trial.name(),
            format_bytes(lease),
            held.running.len() + 1,
            format_bytes(free)
        ));
        Ok(Running {
            id,
            trial: trial.clone(),
            lease,
            child,
            started: Instant::now(),
        })
    }

    /// Records the children that have ended, and tells where the study stands.
    fn reap(
        &self,
        held: &mut Held,
        stop: &AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<(), Error> {
        let mut i = 0;
        while i < held.running.len() {
            let Some(exited) = held.running[i].child.exited()? else {
                i += 1;
                continue;
            };
            let done = held.running.swap_remove(i);
            held.timeline.ended(done.trial.number);
            self.record(held, observer);
            let run_dir = self.dir.join(done.trial.name());
            let summary = RunSummary::read(&run_dir).ok().flatten();
            // A child stopped with the worker (Ctrl-C reaches the whole process group) is
            // handed back with the others.
            let outcome = match (exited, &summary) {
                (Err(_), _) if stop.load(Ordering::SeqCst) => Outcome::Stopped,
                (Ok(()), Some(s)) => Outcome::Trained(s.status.clone()),
                (Ok(()), None) => Outcome::Failed("it wrote no summary".into()),
                (Err(e), _) => Outcome::Failed(e.to_string()),
            };
            let ops = ending(
                done.id,
                &done.trial,
                self.monitor,
                &outcome,
                summary.as_ref(),
            );
            let recorded = record(self.storage, done.id, ops)?;
            crate::failpoint::pass("ended");
            let took = done.started.elapsed().as_secs_f64();
            let name = done.trial.name();
            let line = match (recorded, &outcome) {
                (false, _) => {
                    format!("{name} was taken over by another worker, whose result it is")
                }
                (true, Outcome::Failed(e)) => {
                    let e = crate::config::headline(e);
                    format!("{name} failed ({took:.1} s): {e}")
                }
                (true, Outcome::Stopped) => format!("{name} stopped: handed back"),
                (true, Outcome::Trained(RunStatus::Paused)) => {
                    format!("{name} paused at its rung ({took:.1} s)")
                }
                (true, Outcome::Trained(_)) => format!("{name} completed ({took:.1} s)"),
            };
            observer.message(&line);
            let mut storage = self.storage.lock().expect("storage");
            let me = storage.worker().to_string();
            observer.message(&super::rows::progress(storage.sync()?, self.study, &me));
        }
        Ok(())
    }

    /// Tells the live view (a terminal redraws it) where this worker's trials and the study
    /// stand: its children with their leases, the study's trials waiting, paused and ended.
    fn show(&self, held: &mut Held, observer: &mut dyn Observer) -> Result<(), Error> {
        let mut storage = self.storage.lock().expect("storage");
        let journal = storage.sync()?;
        let record = &journal.studies[self.study.id];
        let live = record.trials.iter().map(|id| &journal.trials[id]);
        let paused = live.clone().filter(|t| t.paused()).count();
        let handed_back = live
            .filter(|t| t.state == State::Waiting && !t.paused())
            .count();
        let status = SearchStatus {
            running: (held.running.iter())
                .map(|r| RunningTrial {
                    name: r.trial.name(),
                    lease: r.lease,
                    seconds: r.started.elapsed().as_secs_f64(),
                })
                .collect(),
            budget: self.budget,
            waiting: self.study.trials().saturating_sub(record.numbered) + handed_back,
            completed: record.ended.completed,
            paused,
            pruned: record.ended.pruned,
            failed: record.ended.failed,
        };
        observer.search_status(&status);
        held.shown = Some(Instant::now());
        Ok(())
    }

    /// This worker's timeline file in its sweep directory, `schedule-<worker>.json`.
    fn schedule_path(&self) -> PathBuf {
        let worker = self.storage.lock().expect("storage").worker().to_string();
        let plain = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
        let name: String = (worker.chars())
            .map(|c| if plain(c) { c } else { '_' })
            .collect();
        self.dir.join(format!("schedule-{name}.json"))
    }

    /// Writes this worker's timeline; one that cannot be written is told, not a reason to stop
    /// training (the journal holds the study).
    fn record(&self, held: &Held, observer: &mut dyn Observer) {
        if let Err(e) = held.timeline.write(&held.schedule) {
            observer.message(&format!("the schedule was not written: {e}"));
        }
    }

    /// Stops every child at its latest checkpoint, then hands back its trial, and the claimed
    /// one's: every child is stopped even if the storage cannot take their ends.
    fn hand_back(&self, held: &mut Held, observer: &mut dyn Observer) -> Result<(), Error> {
        for r in &held.running {
            r.child.terminate();
        }
        let mut stopped = Vec::new();
        for mut r in held.running.drain(..) {
            r.child.stop();
            held.timeline.ended(r.trial.number);
            stopped.push((r.id, r.trial));
        }
        self.record(held, observer);
        let names = (stopped.iter().map(|(_, t)| t.name()))
            .collect::<Vec<_>>()
            .join(", ");
        if !names.is_empty() {
            observer.message(&format!("stopped {names} at their latest checkpoints"));
        }
        let claimed = held.claimed.take().map(|c| (c.id, c.trial));
        for (id, trial) in stopped.iter().chain(claimed.as_ref()) {
            let summary = RunSummary::read(&self.dir.join(trial.name()))
                .ok()
                .flatten();
            let ops = ending(
                *id,
                trial,
                self.monitor,
                &Outcome::Stopped,
                summary.as_ref(),
            );
            record(self.storage, *id, ops)?;
        }
        if !names.is_empty() {
            observer.message(&format!("handed {names} back to the study"));
        }
        Ok(())
    }
}
