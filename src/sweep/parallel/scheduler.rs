//! The scheduler of a parallel search (`[sweep] parallel`, `budget`). Each trial runs in a
//! child process ([`children`](super::processes)) whose `memory.limit` is its lease
//! ([`lease`](crate::sweep::sizing::lease)); a trial starts only when its lease fits in what the running
//! trials leave of the budget, the largest that fits first. A trial whose lease is larger than
//! the whole budget fails before it trains; one that could not be probed runs last, alone; a
//! child that dies is recorded with its reason and the search goes on; and a stop (SIGINT,
//! SIGTERM) or an error stops every child, each at its latest checkpoint.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::launch::write_launch;
use super::processes::Launch;
use super::pruning::{finish, promote, promote_last};
use super::state::{in_use, Ended, Running, State, Tally};
use super::timeline::{now, Timeline};
use crate::config::RunConfig;
use crate::error::Error;
use crate::kinds::Kinds;
use crate::memory::format_bytes;
use crate::record::Observer;
use crate::sweep::prune::{Pruner, Standing};
use crate::sweep::sizing::lease::{next, no_lease_fits, too_large, Arranged};
use crate::sweep::sizing::preflight::lease_of;
use crate::sweep::space::Trial;
use crate::sweep::tpe_draws::Draws;

/// How often the children are looked at.
const POLL: Duration = Duration::from_millis(20);
/// How often the live view is told where the trials stand (besides at each start and end).
const SHOW_EVERY: Duration = Duration::from_millis(500);

/// The search's packing: the budget, how many at once, and how a child starts.
pub(in crate::sweep) struct Pack {
    /// The model kinds: a trial TPE draws is probed for its lease.
    pub kinds: Kinds,
    /// The memory all running trials' leases may add up to.
    pub budget: u64,
    /// Trials at once.
    pub parallel: usize,
    /// The sweep directory.
    pub dir: PathBuf,
    /// `memory.on_limit = "fit"` inside the leases.
    pub fit: bool,
    /// How a child starts.
    pub launch: Launch,
    /// The schedule's file.
    pub schedule: PathBuf,
    /// Start new trials in the order they wait (TPE's, each drawn as it starts), not the
    /// largest lease first.
    pub in_order: bool,
}

/// What chooses a search's trials besides the budget: the pruner, and TPE's draws.
pub(in crate::sweep) struct Chosen<'p> {
    /// The pruner, if the search prunes.
    pub pruner: Option<&'p mut Pruner>,
    /// TPE's draws, if the search draws its trials as they start.
    pub draws: Option<&'p mut Draws>,
}

impl Pack {
    /// Trains `todo` under the budget, each trial with the config `config` builds for it as it
    /// starts, and returns how each trial ended, in the order they ended.
    pub fn run<'a>(
        &self,
        todo: Vec<Arranged<'a>>,
        config: &dyn Fn(&Trial) -> Result<RunConfig, Error>,
        stop: &AtomicBool,
        observer: &mut dyn Observer,
        chosen: Chosen<'_>,
    ) -> Result<Vec<Ended<'a>>, Error> {
        no_lease_fits(&todo, self.budget)?;
        let mut schedule = Timeline::read(&self.schedule)?.unwrap_or_default();
        schedule.budget_bytes = self.budget;
        schedule.parallel = self.parallel;
        let mut state = State {
            promoted: Vec::new(),
            held: BTreeMap::new(),
            pruner: chosen.pruner,
            draws: chosen.draws,
            waiting: Vec::new(),
            unprobed: Vec::new(),
            running: Vec::new(),
            ended: Vec::new(),
            schedule,
            tally: Tally::default(),
            shown: Instant::now(),
        };
        for (trial, lease) in todo {
            match lease {
                Some(lease) if lease > self.budget && !self.in_order => {
                    fail_too_large(&mut state, trial, lease, self.budget, observer)?;
                }
                lease
                    if state
                        .pruner
                        .as_ref()
                        .is_some_and(|p| p.paused(trial.number)) =>
                {
                    let lease = lease.unwrap_or(self.budget);
                    state.held.insert(trial.number, (trial, lease));
                }
                Some(lease) => state.waiting.push((trial, lease)),
                None => state.unprobed.push(trial),
            }
        }
        let driven = promote(&mut state, observer)
            .and_then(|()| self.drive(&mut state, config, stop, observer));
        if driven.is_err() {
            // No child outlives the search: on any error they stop at their checkpoints.
            self.stop_all(&mut state, observer);
        }
        driven.map(|()| state.ended)
    }

    /// Starts trials as their leases fit and records them as they end, until none waits or
    /// runs, or `stop` is set.
    fn drive(
        &self,
        state: &mut State<'_, '_>,
        config: &dyn Fn(&Trial) -> Result<RunConfig, Error>,
        stop: &AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<(), Error> {
        loop {
            if stop.load(Ordering::SeqCst) {
                return Err(Error::Interrupted);
            }
            if state.waiting.is_empty() && state.running.is_empty() && state.promoted.is_empty() {
                if !state.unprobed.is_empty() {
                    let trial = state.unprobed.remove(0);
                    state.waiting.push((trial, self.budget));
                } else if !promote_last(state, observer)? {
                    return finish(state, &self.dir, observer);
                }
            }
            self.start_what_fits(state, config, observer)?;
            if state.shown.elapsed() >= SHOW_EVERY {
                self.show(state, observer);
            }
            let mut i = 0;
            while i < state.running.len() {
                match state.running[i].child.exited()? {
                    Some(outcome) => {
                        let done = state.running.swap_remove(i);
                        self.end(done, outcome.err().map(|e| e.to_string()), state, observer)?;
                    }
                    None => i += 1,
                }
            }
            std::thread::sleep(POLL);
        }
    }

    /// Starts the largest waiting leases that fit in the budget left, up to `parallel`.
    fn start_what_fits(
        &self,
        state: &mut State<'_, '_>,
        config: &dyn Fn(&Trial) -> Result<RunConfig, Error>,
        observer: &mut dyn Observer,
    ) -> Result<(), Error> {
        while state.running.len() < self.parallel {
            let free = self.budget.saturating_sub(in_use(&state.running));
            let leases = |list: &[(&Trial, u64)]| list.iter().map(|w| w.1).collect::<Vec<u64>>();
            // TPE's trials start in order: the next one's lease is known once it is drawn.
            let new = match self.in_order {
                true => (!state.waiting.is_empty()).then_some(0),
                false => next(&leases(&state.waiting), free),
            };
            let (trial, lease) = match next(&leases(&state.promoted), free) {
                Some(i) => state.promoted.remove(i),
                None => match new {
                    Some(i) => state.waiting.remove(i),
                    None => return Ok(()),
                },
            };
            // A trial TPE draws now is probed again for its lease, and waits if it no longer
            // fits (its draw is kept).
            let drawn = match state.draws.as_deref_mut() {
                Some(draws) => Some(draws.trial(trial)?),
                None => None,
            };
            let cfg = config(drawn.as_ref().map_or(trial, |d| &d.0))?;
            let lease = match &drawn {
                Some((drawn, true)) => lease_of(&self.kinds, drawn, &cfg).unwrap_or(self.budget),
                _ => lease,
            };
            if lease > self.budget {
                fail_too_large(state, trial, lease, self.budget, observer)?;
                continue;
            }
            if lease > free {
                state.waiting.insert(0, (trial, lease));
                return Ok(());
            }
            let run_dir = self.dir.join(trial.name());
            let gate = match state.pruner.as_deref_mut() {
                Some(p) => {
                    p.started(trial.number)?;
                    p.gate(&run_dir)?
                }
                None => None,
            };
            let launch = write_launch(&self.dir, trial, &cfg, lease, self.fit, gate.as_ref())?;
            crate::failpoint::pass("start");
            let child = self.launch.start(&launch)?;
            let started = (state.schedule).started(trial.number, lease, child.pid());
            state.running.push(Running {
                trial,
                lease,
                child,
                started,
            });
            self.record(&state.schedule, observer);
            let line = format!(
                "{} started, lease {}; {}",
                trial.name(),
                format_bytes(lease),
                self.status(state)
            );
            observer.message(&line);
            self.show(state, observer);
        }
        Ok(())
    }

    /// Records a child's end, with the pruner: a trial it paused is held until promoted.
    fn end<'a>(
        &self,
        done: Running<'a>,
        error: Option<String>,
        state: &mut State<'a, '_>,
        observer: &mut dyn Observer,
    ) -> Result<(), Error> {
        state.schedule.ended(done.trial.number);
        let ended = now();
        self.record(&state.schedule, observer);
        let run_dir = self.dir.join(done.trial.name());
        let standing = match state.pruner.as_deref_mut() {
            Some(p) => Some(p.ended(done.trial.number, &run_dir, error.is_some())?),
            None => None,
        };
        crate::failpoint::pass("ended");
        let tally = &mut state.tally;
        let how = match (&error, standing) {
            (Some(reason), _) => {
                tally.failed += 1;
                format!("failed: {}", crate::config::headline(reason))
            }
            (None, Some(Standing::Paused)) => {
                state
                    .held
                    .insert(done.trial.number, (done.trial, done.lease));
                "paused at its rung".to_string()
            }
            (None, Some(Standing::Pruned)) => {
                tally.pruned += 1;
                "pruned".to_string()
            }
            (None, _) => {
                tally.completed += 1;
                "completed".to_string()
            }
        };
        let took = ended - done.started;
        let line = format!(
            "{} {how} ({took:.1} s); {}",
            done.trial.name(),
            self.status(state)
        );
        observer.message(&line);
        state.ended.push((done.trial, error));
        promote(state, observer)?;
        self.show(state, observer);
        Ok(())
    }

    /// Writes the schedule; a file that cannot be written is a warning, not a reason to stop
    /// the trials.
    fn record(&self, schedule: &Timeline, observer: &mut dyn Observer) {
        if let Err(e) = schedule.write(&self.schedule) {
            observer.message(&format!("warning: {e}; the trials go on"));
        }
    }

    /// Stops every child (SIGTERM, then SIGKILL after a grace), and records when they ended.
    fn stop_all(&self, state: &mut State<'_, '_>, observer: &mut dyn Observer) {
        for r in &state.running {
            r.child.terminate();
        }
        for r in &mut state.running {
            r.child.stop();
            state.schedule.ended(r.trial.number);
        }
        let names: Vec<String> = state.running.drain(..).map(|r| r.trial.name()).collect();
        if !names.is_empty() {
            let line = format!("stopped {} at their latest checkpoints", names.join(", "));
            observer.message(&line);
        }
        self.record(&state.schedule, observer);
    }
}

/// Fails `trial`, whose lease is larger than the whole budget, before it trains.
fn fail_too_large<'a>(
    state: &mut State<'a, '_>,
    trial: &'a Trial,
    lease: u64,
    budget: u64,
    observer: &mut dyn Observer,
) -> Result<(), Error> {
    let reason = too_large(lease, budget);
    observer.message(&format!(
        "{} failed before training: {reason}",
        trial.name()
    ));
    if let Some(p) = state.pruner.as_deref_mut() {
        p.failed(trial.number)?;
    }
    state.ended.push((trial, Some(reason)));
    Ok(())
}
