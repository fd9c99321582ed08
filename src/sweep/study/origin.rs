//! Where a trial a worker trains comes from, and what the worker says as it takes it.

use std::time::Duration;

use crate::sweep::space::Trial;

/// Where a trial a worker trains comes from (what the worker says as it takes it).
#[derive(Debug, Clone, PartialEq)]
pub enum Origin {
    /// Created just now by this worker.
    New,
    /// Handed back by a worker that a signal stopped.
    HandedBack,
    /// Taken over from this worker, silent for longer than the grace period.
    Silent(String),
    /// Taken over from this worker, whose process (this pid) on this machine has ended.
    Ended(String, u32),
    /// Promoted from this rung (ASHA).
    Promoted(usize),
    /// Going on after this epoch, a population's interval: from the checkpoint of this
    /// member, where it copied one there.
    Interval(usize, Option<usize>),
}

impl Origin {
    /// What a worker says as it takes `trial` from here.
    pub fn said(&self, trial: &Trial, grace: Duration) -> String {
        let name = trial.name();
        match self {
            Origin::New => format!("{name} started: {}", trial.describe()),
            Origin::HandedBack => {
                format!("{name} taken up where a stopped worker handed it back")
            }
            Origin::Promoted(rung) => {
                format!("{name} goes on: it ranks high enough at its rung (epoch {rung})")
            }
            Origin::Interval(epoch, None) => format!("{name} goes on after epoch {epoch}"),
            Origin::Interval(epoch, Some(from)) => format!(
                "{name} goes on after epoch {epoch} from trial-{from:03}'s checkpoint, with {}",
                trial.describe()
            ),
            Origin::Ended(w, pid) => format!(
                "{name} taken over from worker {w}, whose process ({pid}) on this machine has \
                 ended"
            ),
            Origin::Silent(w) => format!(
                "{name} taken over from worker {w}, silent for over {} s",
                grace.as_secs_f64()
            ),
        }
    }
}
