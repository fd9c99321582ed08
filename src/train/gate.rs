//! A gate after each epoch, for a search's pruner: it sees the epoch's validation figures and
//! says whether the run goes on, pauses (stops there, to be resumed later), or is pruned. Both
//! stops come after the epoch's checkpoint, so a paused run resumes exactly where it stopped.
//! The last epoch, and an epoch where early stopping ends the run, are not gated.

use std::collections::BTreeMap;

/// What a run does after an epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Train the next epoch.
    Go,
    /// Stop here, to be resumed (a trial at an ASHA rung); the run's status is `paused`.
    Pause,
    /// Stop here for good, for this reason; the run's status is `pruned`.
    Prune(String),
}

/// Looks at epoch `epoch`'s validation figures (`val_loss` and each `val_<metric>`) and gives
/// the [`Gate`].
pub type EpochGate = Box<dyn FnMut(usize, &BTreeMap<String, f64>) -> Gate + Send>;

/// How a run's epochs ended, when no error ended them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// Every epoch ran, or early stopping ended the run.
    Completed,
    /// The gate paused it.
    Paused,
    /// The gate pruned it, for this reason.
    Pruned(String),
}
