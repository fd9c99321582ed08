//! The one list of the files a checkpoint directory holds. The writer names each file through
//! it, a resume reads each through it before anything is changed (`Checkpoint::verify_file`,
//! whose `match` has an arm for each), and a test compares what a run writes with it: a file
//! added to a checkpoint without a place here fails that test, and a place here without a check
//! does not compile.
//!
//! On disk, each checkpoint lists what it holds in its [`Manifest`] (`manifest.json`, written
//! last, before the directory is renamed into place): every file beside it with its size. A
//! checkpoint is opened only where each file it lists is there at its size, and it is copied
//! (a search's member taking another's weights) by that list alone.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::{RunConfig, ScheduleKind};
use crate::error::Error;

/// A file of a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum File {
    /// `manifest.json`: the list of the checkpoint's other files ([`Manifest`]).
    Manifest,
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
    pub(crate) const ALL: [File; 7] = [
        File::Manifest,
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
            File::Manifest => "manifest.json",
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
            File::Manifest | File::Meta | File::Model | File::Optimizer | File::Schedule => true,
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

/// `manifest.json`: every file of a checkpoint beside it, by name, with its size in bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Manifest {
    /// Each file's name in the checkpoint's directory, and its size.
    pub files: BTreeMap<String, u64>,
}

impl Manifest {
    /// Lists every file in `dir` (the checkpoint, complete but for this list) and writes the
    /// list there.
    pub(crate) fn write(dir: &Path) -> Result<Self, Error> {
        let io = |e: std::io::Error| Error::io(dir, e);
        let mut files = BTreeMap::new();
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let entry = entry.map_err(io)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let metadata = entry.metadata().map_err(io)?;
            if metadata.is_file() && name != File::Manifest.name() {
                files.insert(name, metadata.len());
            }
        }
        let manifest = Self { files };
        let path = File::Manifest.in_dir(dir);
        let text = serde_json::to_vec_pretty(&manifest).expect("a manifest serialises");
        std::fs::write(&path, text).map_err(|e| Error::io(&path, e))?;
        Ok(manifest)
    }

    /// The list in `dir`; `None` for a checkpoint written before checkpoints had one.
    pub(crate) fn read(dir: &Path) -> Result<Option<Self>, Error> {
        let path = File::Manifest.in_dir(dir);
        match std::fs::read(&path) {
            Ok(text) => crate::record::parse_json(&text)
                .map(Some)
                .map_err(|e| Error::checkpoint(&path, format!("not a checkpoint's list: {e}"))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(&path, e)),
        }
    }

    /// Copies the checkpoint `from` to `to` by its list: the files it lists and the list (every
    /// file of a checkpoint from before the list), checked first, written under a temporary
    /// name and renamed into place as a checkpoint is written.
    pub(crate) fn copy(from: &Path, to: &Path) -> Result<(), Error> {
        let io = |path: &Path, e: std::io::Error| Error::io(path, e);
        let names: Vec<String> = match Self::read(from)? {
            Some(manifest) => {
                manifest.check(from)?;
                let listed = manifest.files.into_keys();
                listed.chain([File::Manifest.name().to_string()]).collect()
            }
            None => {
                let mut names = Vec::new();
                for entry in std::fs::read_dir(from).map_err(|e| io(from, e))? {
                    let entry = entry.map_err(|e| io(from, e))?;
                    if entry.path().is_file() {
                        names.push(entry.file_name().to_string_lossy().into_owned());
                    }
                }
                names
            }
        };
        let mut tmp = to.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = std::path::PathBuf::from(tmp);
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp).map_err(|e| io(&tmp, e))?;
        }
        std::fs::create_dir_all(&tmp).map_err(|e| io(&tmp, e))?;
        for file in names {
            let source = from.join(&file);
            std::fs::copy(&source, tmp.join(&file)).map_err(|e| io(&source, e))?;
        }
        super::put_in_place(&tmp, to)
    }

    /// Each file listed is in `dir` at its size: one missing, or of another size (truncated,
    /// or changed since), is the error naming it.
    pub(crate) fn check(&self, dir: &Path) -> Result<(), Error> {
        for (name, &bytes) in &self.files {
            let path = dir.join(name);
            let listed = File::Manifest.name();
            let found = match std::fs::metadata(&path) {
                Ok(metadata) => metadata.len(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let message = format!("missing, and the checkpoint's {listed} lists it");
                    return Err(Error::checkpoint(&path, message));
                }
                Err(e) => return Err(Error::io(&path, e)),
            };
            if found != bytes {
                let message = format!(
                    "{found} bytes, where the checkpoint's {listed} lists {bytes}: truncated or \
                     changed since it was written"
                );
                return Err(Error::checkpoint(&path, message));
            }
        }
        Ok(())
    }
}
