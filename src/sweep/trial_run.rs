//! One trial of a search (a run of a sweep of runs), in its own directory: found finished,
//! resumed from its latest checkpoint, or started.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::config::RunConfig;
use crate::error::Error;
use crate::kinds::Kinds;
use crate::record::{Observer, RunStatus, RunSummary};
use crate::train::EpochGate;
use crate::Trainer;

/// Trains `cfg` in `run_dir`: a run that finished before keeps its summary, one that stopped
/// resumes from its latest checkpoint, and the rest start. A run stopped before its first
/// checkpoint (a signal during its set-up) has nothing to resume from: it starts again in its
/// own directory, where the search reads it, not beside it in a `-2` one.
pub(super) fn train_or_resume(
    kinds: &Kinds,
    cfg: RunConfig,
    run_dir: &Path,
    mut observer: Box<dyn Observer>,
    gate: Option<EpochGate>,
    stop: Option<Arc<AtomicBool>>,
) -> Result<RunSummary, Error> {
    // A trial reads, resumes, deletes and writes only inside its search's directory.
    crate::record::names::inside(&cfg.run.output_dir, run_dir).map_err(|why| {
        Error::Sweep(crate::error::SweepError::Plan {
            origin: run_dir.display().to_string(),
            message: format!("{why}; nothing was read or changed"),
        })
    })?;
    if let Some(summary) = finished(run_dir, cfg.train.epochs)? {
        observer.message(&format!("finished before: {}", run_dir.display()));
        return Ok(summary);
    }
    let mut trainer = Trainer::new(cfg).observer(observer);
    if let Some(gate) = gate {
        trainer = trainer.gate(gate);
    }
    if let Some(stop) = stop {
        trainer = trainer.stop_when(stop);
    }
    let latest = run_dir.join("checkpoints").join("latest");
    if latest.symlink_metadata().is_ok() {
        // A checkpoint that cannot be read is the resume's error, naming it. Retuned: a
        // population's member goes on with the settings its interval gave it (a search's
        // other trials keep theirs, which the search's own resume checks against its config).
        return kinds.train(trainer.resume(run_dir).retune());
    }
    if run_dir.exists() {
        std::fs::remove_dir_all(run_dir).map_err(|e| Error::io(run_dir, e))?;
    }
    kinds.train(trainer)
}

/// The summary of a run in `run_dir` that completed `epochs` epochs (or more), if there is one.
/// A summary that cannot be read is an error: training the run again would replace what it
/// recorded on the strength of a damaged file.
pub(crate) fn finished(run_dir: &Path, epochs: usize) -> Result<Option<RunSummary>, Error> {
    Ok(RunSummary::read(run_dir)?.filter(|summary| {
        summary.status == RunStatus::Completed
            && summary.epochs >= epochs
            && summary.retained.is_some()
    }))
}
