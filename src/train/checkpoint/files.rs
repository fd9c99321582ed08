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
use crate::record::names::{inside, plain, run_of_checkpoint};

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

    /// The list in `dir`; `None` for a checkpoint written before checkpoints had one. Each
    /// name it lists is one plain file name, or the list is refused naming it: a name read
    /// back is joined to the checkpoint's directory, and one with `..` or a separator would
    /// reach outside it.
    pub(crate) fn read(dir: &Path) -> Result<Option<Self>, Error> {
        let path = File::Manifest.in_dir(dir);
        let manifest: Self = match std::fs::read(&path) {
            Ok(text) => crate::record::parse_json(&text)
                .map_err(|e| Error::checkpoint(&path, format!("not a checkpoint's list: {e}")))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, e)),
        };
        for name in manifest.files.keys() {
            let bad = match plain(name) {
                Err(why) => Some(why),
                Ok(()) if name == File::Manifest.name() => Some("the list itself"),
                Ok(()) => None,
            };
            if let Some(why) = bad {
                let message = format!(
                    "lists {name:?}, which is not one of the checkpoint's files ({why}); \
                     nothing was read or changed"
                );
                return Err(Error::checkpoint(&path, message));
            }
        }
        Ok(Some(manifest))
    }

    /// The names of the checkpoint `dir`'s files, each checked before anything reads it: the
    /// files its list names, each at its size, and the list (a checkpoint from before the
    /// list: every file there). Each is one plain name whose path, links followed, stays
    /// inside the checkpoint's run directory.
    pub(crate) fn files_of(dir: &Path) -> Result<Vec<String>, Error> {
        let names: Vec<String> = match Self::read(dir)? {
            Some(manifest) => {
                manifest.check(dir)?;
                let listed = manifest.files.into_keys();
                listed.chain([File::Manifest.name().to_string()]).collect()
            }
            None => {
                let io = |e: std::io::Error| Error::io(dir, e);
                let mut names = Vec::new();
                for entry in std::fs::read_dir(dir).map_err(io)? {
                    let entry = entry.map_err(io)?;
                    if entry.path().is_file() {
                        names.push(entry.file_name().to_string_lossy().into_owned());
                    }
                }
                names
            }
        };
        let run = run_of_checkpoint(dir);
        for path in std::iter::once(dir.to_path_buf()).chain(names.iter().map(|n| dir.join(n))) {
            inside(&run, &path).map_err(|why| {
                Error::checkpoint(&path, format!("{why}; nothing was read or changed"))
            })?;
        }
        Ok(names)
    }

    /// Copies the checkpoint `from` to `to` by its list: the files it lists and the list (every
    /// file of a checkpoint from before the list), checked first, written under a temporary
    /// name and renamed into place as a checkpoint is written.
    pub(crate) fn copy(from: &Path, to: &Path) -> Result<(), Error> {
        let io = |path: &Path, e: std::io::Error| Error::io(path, e);
        let names = Self::files_of(from)?;
        // Written only inside the run it is copied into.
        let run = run_of_checkpoint(to);
        inside(&run, to).map_err(|why| {
            Error::checkpoint(to, format!("{why}; nothing was copied or changed"))
        })?;
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
