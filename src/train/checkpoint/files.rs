//! The one list of the files a checkpoint directory holds. The writer names each file through
//! it, a resume reads each through it before anything is changed ([`File::verify`]), and a
//! test compares what a run writes with it: a file added to a checkpoint without a place here
//! fails that test, and a place here without a check does not compile.

use std::path::Path;

use burn::store::BurnpackStore;

use super::read::Checkpoint;
use crate::config::{RunConfig, ScheduleKind};
use crate::error::Error;

/// A file of a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum File {
    /// `meta.json`: where the run stands ([`super::CheckpointState`]).
    Meta,
    /// `model.bpk`: the weights.
    Model,
    /// `optimizer.bpk`: the optimizer's state.
    Optimizer,
    /// `schedule.bpk`: the learning-rate schedule's state (Burn's record).
    Schedule,
    /// `plateau.json`: a plateau schedule's own state, beside Burn's record.
    Plateau,
    /// `ema.bpk`: `[train.ema]`'s moving average.
    Ema,
}

impl File {
    /// Every file, in the order a resume reads them.
    pub(crate) const ALL: [File; 6] = [
        File::Meta,
        File::Model,
        File::Optimizer,
        File::Schedule,
        File::Plateau,
        File::Ema,
    ];

    /// Its name in the checkpoint's directory.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            File::Meta => "meta.json",
            File::Model => "model.bpk",
            File::Optimizer => "optimizer.bpk",
            File::Schedule => "schedule.bpk",
            File::Plateau => "plateau.json",
            File::Ema => "ema.bpk",
        }
    }

    /// Whether a run that keeps `extras` writes it into each checkpoint.
    pub(crate) fn written(self, extras: Extras) -> bool {
        match self {
            File::Meta | File::Model | File::Optimizer | File::Schedule => true,
            File::Plateau => extras.plateau,
            File::Ema => extras.ema,
        }
    }

    /// Reads it through in `checkpoint`, as a run that keeps `extras` continues from it: one
    /// missing, truncated, corrupt or out of range is an error naming it. A schedule's state
    /// (and so a plateau's) may be absent from a checkpoint written before schedules were
    /// saved, whose run had none.
    pub(crate) fn verify(self, checkpoint: &Checkpoint, extras: Extras) -> Result<(), Error> {
        let path = checkpoint.dir.join(self.name());
        let unreadable =
            |e: &dyn std::fmt::Debug| Error::checkpoint(&path, format!("cannot be read: {e:?}"));
        let schedule_kept = checkpoint.dir.join(File::Schedule.name()).exists();
        match self {
            // Parsed where the checkpoint was opened.
            File::Meta => Ok(()),
            File::Model => checkpoint.weights().map(drop),
            File::Optimizer => burn::optim::record::OptimizerRecord::load(&path)
                .map(drop)
                .map_err(|e| unreadable(&e)),
            File::Schedule if schedule_kept => {
                burn::optim::lr_scheduler::LrSchedulerRecord::load(&path)
                    .map(drop)
                    .map_err(|e| unreadable(&e))
            }
            File::Plateau if schedule_kept && extras.plateau => {
                crate::train::decide::read_plateau(&path).map(drop)
            }
            File::Ema if extras.ema => {
                let mut store = BurnpackStore::from_file(&path);
                burn::store::ModuleStore::get_all_tensors(&mut store)
                    .map(drop)
                    .map_err(|e| {
                        let why = match path.exists() {
                            true => format!("cannot be read: {e}"),
                            false => "missing: [train.ema] continues from the checkpoint's average"
                                .into(),
                        };
                        Error::checkpoint(&path, why)
                    })
            }
            File::Schedule | File::Plateau | File::Ema => Ok(()),
        }
    }

    /// This file in the checkpoint directory `dir`.
    pub(crate) fn in_dir(self, dir: &Path) -> std::path::PathBuf {
        dir.join(self.name())
    }
}

/// What a run's config has its checkpoints hold besides the files every one holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Extras {
    /// A plateau schedule's state (`train.schedule.kind = "plateau"`).
    pub plateau: bool,
    /// The moving average (`[train.ema]`).
    pub ema: bool,
}

impl Extras {
    /// Those of a run under `config`.
    pub(crate) fn of(config: &RunConfig) -> Self {
        Self {
            plateau: (config.train.schedule.as_ref())
                .is_some_and(|s| s.kind == ScheduleKind::Plateau),
            ema: config.train.ema.is_some(),
        }
    }
}
