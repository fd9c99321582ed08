//! Pruning a search's trials (`[sweep.prune]`): ASHA pauses each trial at its rungs and
//! promotes the best later ([`asha`]); the median rule stops a trial that is behind the
//! completed trials' median at the same epoch ([`median`]). The decisions are pure, over a
//! [`Record`] of the trials' curves that a study rebuilds from its journal (`study/rungs.rs`);
//! [`gate`] is what a trial's run asks after each epoch, in a worker's process or a child's.
//!
//! The best trial is chosen among those that trained to their last epoch: a pruned trial's
//! value is from fewer epochs, not comparable.

pub(in crate::sweep) mod asha;
mod gate_spec;
mod median;
mod record;

use std::path::Path;

pub use gate_spec::{GateSpec, ReadRecord};
pub use record::{Curve, Record, Standing};

use crate::error::Error;
use crate::record::{write_atomic, RunStatus, RunSummary};

/// Rewrites the summary of the paused run in `run_dir` as pruned, for `why` (a run that is
/// not paused is left as it is).
pub(in crate::sweep) fn mark_pruned(run_dir: &Path, why: &str) -> Result<(), Error> {
    let Some(mut summary) = RunSummary::read(run_dir)? else {
        return Ok(());
    };
    if summary.status != RunStatus::Paused {
        return Ok(());
    }
    summary.status = RunStatus::Pruned;
    summary.stopped_by = Some(why.to_string());
    let path = run_dir.join("summary.json");
    let json = serde_json::to_vec_pretty(&summary).expect("summaries serialise");
    write_atomic(&path, &json).map_err(|e| Error::io(&path, e))
}
