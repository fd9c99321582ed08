//! The one loop of every worker, whatever trains its trials, as Ray Tune's TuneController runs
//! its trials through one executor: while its runner has room it takes a piece of work from
//! the study ([`next`](super::next)) and hands it over, beats for every trial the runner holds,
//! and lets the runner record each trial that ended, until the study has nothing left. A
//! signal, or an error, hands back whatever the runner still holds. Two runners:
//! [`InProcess`](super::trial::InProcess) trains one trial at a time in this process (a search
//! alone, or one worker of a study), [`Slots`](super::slots::Slots) starts each in a child
//! process under its memory lease (`sweep.parallel > 1`), as many as its budget holds.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::heartbeat::Heartbeat;
use super::joined::Study;
use super::journal_rows::progress;
use super::next::{take, Beats, Work};
use super::population::Prepare;
use super::storage::Storage;
use crate::error::Error;
use crate::record::Observer;
use crate::sweep::space::Trial;

/// How often the loop looks at its runner's trials.
const POLL: Duration = Duration::from_millis(20);

/// A trial the worker took from the study, for its runner.
pub struct Taken {
    /// Its id in the journal.
    pub id: usize,
    pub trial: Trial,
    /// The epoch it pauses after (ASHA's next rung, a population's next interval).
    pub pause_at: Option<usize>,
    /// A population's member: the copy it makes before it trains, or its own run it goes on
    /// from.
    pub prepare: Option<Prepare>,
}

/// What trains a worker's trials.
pub trait Runner {
    /// A trial taken and made ready to start.
    type Claimed;

    /// The claimed trial's id in the journal.
    fn id_of(claimed: &Self::Claimed) -> usize;
    /// Whether it takes another trial now.
    fn has_room(&self) -> bool;
    /// Whether none of its trials is still training.
    fn idle(&self) -> bool;
    /// The trials it trains, to beat for.
    fn ids(&self) -> Vec<usize>;
    /// Makes a taken trial ready to start; `None` when it failed before training (recorded).
    fn claim(
        &mut self,
        taken: Taken,
        observer: &mut dyn Observer,
    ) -> Result<Option<Self::Claimed>, Error>;
    /// Starts the claimed trial if it fits now; whether it did.
    fn start(
        &mut self,
        claimed: &Self::Claimed,
        observer: &mut dyn Observer,
    ) -> Result<bool, Error>;
    /// Records the trials that have ended since it was last asked.
    fn reap(&mut self, stop: &AtomicBool, observer: &mut dyn Observer) -> Result<(), Error>;
    /// Tells the live view where its trials stand.
    fn show(&mut self, observer: &mut dyn Observer) -> Result<(), Error>;
    /// Stops what it trains at its latest checkpoint and hands it back to the study, with the
    /// claimed trial.
    fn hand_back(
        &mut self,
        claimed: Option<Self::Claimed>,
        observer: &mut dyn Observer,
    ) -> Result<(), Error>;
}

/// Takes and trains `study`'s work in `storage` through `runner` until none is left, or a
/// signal sets `stop`; every trial the runner still holds is then handed back.
pub fn until_done<R: Runner>(
    runner: &mut R,
    study: &Study,
    storage: &Arc<Mutex<Storage>>,
    stop: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<(), Error> {
    let heartbeat = Heartbeat::start(Arc::clone(storage), study.heartbeat());
    let mut claimed = None;
    let worked = drive(
        runner,
        &mut claimed,
        (study, storage),
        &heartbeat,
        stop,
        observer,
    );
    if worked.is_err() {
        // Every trial is stopped whatever the storage does; the first error is the one told
        // (a storage that failed fails the hand-back too).
        let handed = runner.hand_back(claimed, observer);
        return worked.and(handed);
    }
    worked
}

/// The loop: trials that ended recorded, work taken while the runner has room, the claimed
/// trial started once it fits.
fn drive<R: Runner>(
    runner: &mut R,
    claimed: &mut Option<R::Claimed>,
    (study, storage): (&Study, &Mutex<Storage>),
    heartbeat: &Heartbeat,
    stop: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<(), Error> {
    let mut beats = Beats::default();
    // When the study last had nothing to start: it is asked again after a pause.
    let mut idle_since: Option<Instant> = None;
    let pause = study.heartbeat().min(Duration::from_secs(1));
    let held = |runner: &R, claimed: &Option<R::Claimed>| {
        let mut ids = runner.ids();
        ids.extend(claimed.as_ref().map(R::id_of));
        ids
    };
    loop {
        if stop.load(Ordering::SeqCst) {
            return Err(Error::Interrupted);
        }
        runner.reap(stop, observer)?;
        let asked = idle_since.is_some_and(|t| t.elapsed() < pause);
        if claimed.is_none() && runner.has_room() && !asked {
            match take(storage, study, &mut beats)? {
                Work::Train {
                    id,
                    trial,
                    from,
                    pause_at,
                    prepare,
                } => {
                    observer.message(&from.said(&trial, study.grace()));
                    let taken = Taken {
                        id,
                        trial,
                        pause_at,
                        prepare,
                    };
                    *claimed = runner.claim(taken, observer)?;
                    idle_since = None;
                }
                Work::Done(pruned) if runner.idle() => {
                    say_pruned(&pruned, observer);
                    return Ok(());
                }
                Work::Wait | Work::Done(_) => idle_since = Some(Instant::now()),
            }
        }
        if let Some(ready) = claimed.as_ref() {
            // Claimed until it starts: a start that fails hands it back with the rest.
            heartbeat.beat_for(held(runner, claimed));
            if runner.start(ready, observer)? {
                *claimed = None;
            }
        }
        runner.show(observer)?;
        heartbeat.beat_for(held(runner, claimed));
        std::thread::sleep(POLL);
    }
}

/// Tells how a trial ended, `line`, or that another worker took it over where its end was not
/// this worker's to record; then where the study stands.
pub fn tell_ended(
    (storage, study): (&Mutex<Storage>, &Study),
    (trial, recorded, line): (&Trial, bool, Option<String>),
    observer: &mut dyn Observer,
) -> Result<(), Error> {
    let line = match recorded {
        false => Some(format!(
            "{} was taken over by another worker, whose result it is",
            trial.name()
        )),
        true => line,
    };
    if let Some(line) = line {
        observer.message(&line);
    }
    let mut storage = storage.lock().expect("storage");
    let me = storage.worker().to_string();
    observer.message(&progress(storage.sync()?, study, &me));
    Ok(())
}

/// `trial-007 pruned: ASHA: ...` for each trial the worker pruned at the study's end.
fn say_pruned(pruned: &[(usize, String)], observer: &mut dyn Observer) {
    for (number, why) in pruned {
        observer.message(&format!("trial-{number:03} pruned: {why}"));
    }
}
