//! Memory leases: what a trial run in a child process may hold, and which waiting trial starts
//! next under the budget. Pure arithmetic, tested without a device.
//!
//! A trial's lease comes from its probe ([`crate::train::preflight`]): what the probing process
//! held when the probe started (its one-time state and the trial's data), plus what a step of
//! the run peaks at above that in the one model of a step's need
//! ([`StepFigures::peak`](crate::memory::policy::StepFigures::peak): the model, the
//! activations and the gradients beside the optimizer's state), or a checkpoint's copy of the
//! weights and the optimizer's state (a run writes one at the end of every epoch) if that is
//! more. The lease is the limit under which `on_limit = "fit"` takes that step at its
//! micro-batch ([`limit_for`]), with [`LEASE_MARGIN`] more for what the child's process holds
//! that the probing one did not: the child fits its step under its lease by the same figures
//! and the same function, so a trial whose step fits its lease is never refused by its own
//! check. The child trains with `memory.limit` set to its lease, so the lease is enforced,
//! not hoped.

use crate::error::{Error, SweepError};
use crate::memory::format_bytes;
use crate::sweep::space::Trial;

/// A trial to train, in the order to train it, with its lease where trials run in parallel
/// and one could be had.
pub(in crate::sweep) type Arranged<'a> = (&'a Trial, Option<u64>);

/// The error of a trial whose lease the whole budget cannot hold.
pub fn too_large(lease: u64, budget: u64) -> String {
    format!(
        "its memory lease {} is larger than the whole budget {} (sweep.budget); raise \
         sweep.budget, or make the trial smaller",
        format_bytes(lease),
        format_bytes(budget)
    )
}

/// Refuses a budget smaller than every trial's lease, before any trial starts: not one of them
/// could train, and each would fail alone.
pub(in crate::sweep) fn no_lease_fits(todo: &[Arranged<'_>], budget: u64) -> Result<(), Error> {
    let leases: Option<Vec<(u64, &Trial)>> = (todo.iter())
        .map(|(trial, lease)| lease.map(|l| (l, *trial)))
        .collect();
    let Some(smallest) = leases.and_then(|l| l.into_iter().min_by_key(|&(l, _)| l)) else {
        return Ok(());
    };
    if smallest.0 <= budget {
        return Ok(());
    }
    Err(Error::Sweep(SweepError::Lease {
        message: format!(
            "{} is smaller than every trial's memory lease (the smallest, {}'s: {}); raise \
             sweep.budget, or make the trials smaller",
            format_bytes(budget),
            smallest.1.name(),
            format_bytes(smallest.0)
        ),
    }))
}
