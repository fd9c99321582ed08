//! The runner of a worker that packs its device (`sweep.parallel > 1`): each trial it takes
//! trains in a child process whose `memory.limit` is its lease, up to `parallel` at once under
//! the worker's budget. A taken trial's lease is probed when it is claimed, and it starts once
//! the lease fits in what the running trials leave of the budget (it waits, beaten for, till
//! then). The children write their epochs to the study themselves
//! ([`child`](super::reporting::child)); the runner writes each one's end, and a hand-back
//! stops every child at its latest checkpoint. What it holds, the children and their timeline,
//! is [`Held`]'s; each trial's runs are recorded in the journal at its start and its end
//! ([`SLOT`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::drive::{tell_ended, Runner, Taken};
use super::ending::{ending, record, Outcome};
use super::held::{Held, Running};
use super::joined::Study;
use super::population::carry_out;
use super::reporting::Reports;
use super::storage::Storage;
use crate::config::RunConfig;
use crate::error::Error;
use crate::memory::format_bytes;
use crate::record::{Observer, RunStatus, RunSummary, RunningTrial, SearchStatus};
use crate::sweep::journal::attrs::SLOT;
use crate::sweep::journal::op::State;
use crate::sweep::parallel::launch::write_launch;
use crate::sweep::parallel::processes::Launch;
use crate::sweep::sizing::lease::too_large;
use crate::sweep::sizing::preflight::lease_of;
use crate::sweep::space::Trial;
use crate::sweep::trial_config::TrialBuild;
use crate::train::preflight::warm_up;

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
    /// The trials running, and what the runner keeps of them.
    pub held: Held,
}

/// A trial this worker claimed, probed, and will start once its lease fits.
pub struct Claimed {
    id: usize,
    trial: Trial,
    cfg: RunConfig,
    lease: u64,
    pause_at: Option<usize>,
}

impl Runner for Slots<'_> {
    type Claimed = Claimed;

    fn id_of(claimed: &Claimed) -> usize {
        claimed.id
    }

    fn has_room(&self) -> bool {
        self.held.running.len() < self.parallel
    }

    fn idle(&self) -> bool {
        self.held.running.is_empty()
    }

    fn ids(&self) -> Vec<usize> {
        self.held.running.iter().map(|r| r.id).collect()
    }

    /// Probes claimed trial `id` for its lease: it waits for room, or fails now (recorded) if
    /// it cannot be built or its lease is larger than the whole budget.
    fn claim(
        &mut self,
        taken: Taken,
        observer: &mut dyn Observer,
    ) -> Result<Option<Claimed>, Error> {
        let Taken {
            id,
            trial,
            pause_at,
            prepare,
        } = taken;
        // A population's member makes the copy it goes on from first, or finds its own run.
        let prepared = prepare.map(|p| carry_out(self.storage, id, p, self.dir));
        let built = match prepared {
            Some(Err(e)) => Err(e),
            _ => self.build.config(&trial),
        };
        // A planned trial (not one TPE drew) this worker probed for the order is not probed
        // again.
        let planned = self.study.planned(trial.number);
        let known = (self.probed.get(&trial.number))
            .filter(|_| planned.is_some_and(|p| p.values == trial.values));
        // The warm-up and the probe hold memory as a run does: under a provisional lease
        // where the device has a budget, given back once the trial is sized.
        let probing = match &built {
            Ok(cfg) if !self.held.warm || known.is_none() => crate::lease::probing(cfg, observer)?,
            _ => None,
        };
        if let (Ok(cfg), false) = (&built, self.held.warm) {
            // A lease counts what a fresh process holds before the step: its one-time state.
            warm_up(cfg)?;
            self.held.warm = true;
        }
        let lease = (built.as_ref().ok()).map(|cfg| match known {
            Some(&lease) => lease,
            None => lease_of(self.build.kinds, &trial, cfg).unwrap_or(self.budget),
        });
        drop(probing);
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

    /// Starts the claimed trial in a child once its lease fits in what the running trials
    /// leave of the budget.
    fn start(&mut self, claimed: &Claimed, observer: &mut dyn Observer) -> Result<bool, Error> {
        if claimed.lease > self.held.free(self.budget) {
            return Ok(false);
        }
        let trial = claimed.trial.number;
        // A trial another worker ran before (paused at a rung, promoted here) keeps its runs.
        if !self.held.timeline.slots.contains_key(&trial) {
            let mut storage = self.storage.lock().expect("storage");
            let slot = (storage.sync()?.trials.get(&claimed.id))
                .and_then(|t| serde_json::from_value(t.system_attrs.get(SLOT)?.clone()).ok());
            if let Some(slot) = slot {
                self.held.timeline.slots.insert(trial, slot);
            }
        }
        let running = self.launch(claimed, observer)?;
        self.held
            .timeline
            .started(trial, running.lease, running.child.pid());
        let slot = self.held.slot(running.id, trial);
        // Held before anything else can fail: a hand-back stops its child.
        self.held.running.push(running);
        let mut storage = self.storage.lock().expect("storage");
        storage.append(slot.as_slice())?;
        drop(storage);
        self.held.record_timeline(observer);
        self.show_now(observer)?;
        Ok(true)
    }

    /// Records the children that have ended, and tells where the study stands.
    fn reap(&mut self, stop: &AtomicBool, observer: &mut dyn Observer) -> Result<(), Error> {
        let mut i = 0;
        while i < self.held.running.len() {
            let Some(exited) = self.held.running[i].child.exited()? else {
                i += 1;
                continue;
            };
            let done = self.held.running.swap_remove(i);
            self.held.timeline.ended(done.trial.number);
            self.held.record_timeline(observer);
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
            let mut ops = ending(
                done.id,
                &done.trial,
                self.monitor,
                &outcome,
                summary.as_ref(),
            );
            // Before its end: the journal takes no attribute of a finished trial.
            ops.splice(0..0, self.held.slot(done.id, done.trial.number));
            let recorded = record(self.storage, done.id, ops)?;
            crate::failpoint::pass("ended");
            let took = done.started.elapsed().as_secs_f64();
            let name = done.trial.name();
            let line = match &outcome {
                Outcome::Failed(e) => {
                    let e = crate::config::headline(e);
                    format!("{name} failed ({took:.1} s): {e}")
                }
                Outcome::Stopped => format!("{name} stopped: handed back"),
                Outcome::Trained(RunStatus::Paused) => {
                    format!("{name} paused at its rung ({took:.1} s)")
                }
                Outcome::Trained(_) => format!("{name} completed ({took:.1} s)"),
            };
            let study = (&**self.storage, self.study);
            tell_ended(study, (&done.trial, recorded, Some(line)), observer)?;
        }
        Ok(())
    }

    fn show(&mut self, observer: &mut dyn Observer) -> Result<(), Error> {
        if self.held.shown.is_none_or(|t| t.elapsed() >= SHOW_EVERY) {
            self.show_now(observer)?;
        }
        Ok(())
    }

    /// Stops every child at its latest checkpoint, then hands back its trial, and the claimed
    /// one's: every child is stopped even if the storage cannot take their ends.
    fn hand_back(
        &mut self,
        claimed: Option<Claimed>,
        observer: &mut dyn Observer,
    ) -> Result<(), Error> {
        for r in &self.held.running {
            r.child.terminate();
        }
        let mut stopped = Vec::new();
        for mut r in self.held.running.drain(..) {
            r.child.stop();
            self.held.timeline.ended(r.trial.number);
            stopped.push((r.id, r.trial));
        }
        self.held.record_timeline(observer);
        let names = (stopped.iter().map(|(_, t)| t.name()))
            .collect::<Vec<_>>()
            .join(", ");
        if !names.is_empty() {
            observer.message(&format!("stopped {names} at their latest checkpoints"));
        }
        let claimed = claimed.map(|c| (c.id, c.trial));
        for (id, trial) in stopped.iter().chain(claimed.as_ref()) {
            let summary = RunSummary::read(&self.dir.join(trial.name()))
                .ok()
                .flatten();
            let mut ops = ending(
                *id,
                trial,
                self.monitor,
                &Outcome::Stopped,
                summary.as_ref(),
            );
            ops.splice(0..0, self.held.slot(*id, trial.number));
            record(self.storage, *id, ops)?;
        }
        if !names.is_empty() {
            observer.message(&format!("handed {names} back to the study"));
        }
        Ok(())
    }
}

impl Slots<'_> {
    /// The line a worker that packs its device starts with.
    pub fn said(&self) -> String {
        format!(
            "up to {} trials at once on this device, under a budget of {}",
            self.parallel,
            format_bytes(self.budget)
        )
    }

    /// Starts the claimed trial in a child, under its lease.
    fn launch(&self, claimed: &Claimed, observer: &mut dyn Observer) -> Result<Running, Error> {
        let held = &self.held;
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

    /// Tells the live view (a terminal redraws it) where this worker's trials and the study
    /// stand: its children with their leases, the study's trials waiting, paused and ended.
    fn show_now(&mut self, observer: &mut dyn Observer) -> Result<(), Error> {
        let mut storage = self.storage.lock().expect("storage");
        let journal = storage.sync()?;
        let record = &journal.studies[self.study.id];
        let live = record.trials.iter().map(|id| &journal.trials[id]);
        let paused = live.clone().filter(|t| t.paused()).count();
        let handed_back = live
            .filter(|t| t.state == State::Waiting && !t.paused())
            .count();
        let status = SearchStatus {
            running: (self.held.running.iter())
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
        self.held.shown = Some(Instant::now());
        Ok(())
    }
}
