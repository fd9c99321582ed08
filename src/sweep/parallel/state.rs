//! Where the trials of a parallel search stand while the scheduler runs them: promoted, held
//! at a rung, waiting, running in a child, or ended.

use std::collections::BTreeMap;
use std::time::Instant;

use super::processes::Child;
use super::timeline::Timeline;
use crate::sweep::prune::Pruner;
use crate::sweep::space::Trial;
use crate::sweep::tpe_draws::Draws;

/// How a trial of a parallel search ended: `None` if its child exited 0 (its summary says
/// the rest), else why it failed.
pub(in crate::sweep) type Ended<'a> = (&'a Trial, Option<String>);

/// A trial's child, with what it holds of the budget.
pub(super) struct Running<'a> {
    pub(super) trial: &'a Trial,
    pub(super) lease: u64,
    pub(super) child: Child,
    pub(super) started: f64,
}

/// Where the trials of one search stand.
pub(super) struct State<'a, 'p> {
    /// Trials the pruner promoted, with their leases: they start before new ones.
    pub(super) promoted: Vec<(&'a Trial, u64)>,
    /// Trials paused at a rung, with their leases, until the pruner promotes them.
    pub(super) held: BTreeMap<usize, (&'a Trial, u64)>,
    /// The search's pruner, if it prunes.
    pub(super) pruner: Option<&'p mut Pruner>,
    /// TPE's draws, if the search draws its trials as they start.
    pub(super) draws: Option<&'p mut Draws>,
    /// Probed trials, in the order to prefer on equal leases, with their leases.
    pub(super) waiting: Vec<(&'a Trial, u64)>,
    /// Trials that could not be probed: each runs alone, once nothing else waits or runs.
    pub(super) unprobed: Vec<&'a Trial>,
    pub(super) running: Vec<Running<'a>>,
    pub(super) ended: Vec<Ended<'a>>,
    pub(super) schedule: Timeline,
    /// How the trials ended so far, for the live view.
    pub(super) tally: Tally,
    /// When the live view was last told.
    pub(super) shown: Instant,
}

/// Trials ended in this process, by how.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) completed: usize,
    pub(super) pruned: usize,
    pub(super) failed: usize,
}

/// The budget the running trials hold.
pub(super) fn in_use(running: &[Running<'_>]) -> u64 {
    running.iter().map(|r| r.lease).sum()
}
