//! The one list of the files a checkpoint directory holds. The writer names each file through
//! it, a resume reads each through it before anything is changed (`Checkpoint::verify_file`,
//! whose `match` has an arm for each), and a test compares what a run writes with it: a file
//! added to a checkpoint without a place here fails that test, and a place here without a check
//! does not compile.

use std::path::Path;

use crate::config::{RunConfig, ScheduleKind};

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
            // The schedule writes it beside its own record.
            File::Plateau => crate::train::decide::PLATEAU_FILE,
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
