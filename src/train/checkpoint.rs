//! Checkpoints: model and optimizer state after each epoch (and before the first), so a run
//! that stops, for a memory limit, a crash or a kill, keeps its last good state on disk and can
//! resume from it ([`Checkpoint::latest`]).
//!
//! Layout: `<run>/checkpoints/epoch-<N>/` holds the files [`File`] lists (`model.bpk`,
//! `optimizer.bpk`, `schedule.bpk`, `meta.json`, and `plateau.json` and `ema.bpk` where the
//! run's config asks for them, then `manifest.json`, the list of them all with their sizes),
//! after epoch N (and `step-<S>/` after global step S, inside an epoch, with
//! `checkpoint.every_steps`), written under a temporary name and renamed into place, then
//! `checkpoints/latest` (the directory name) is replaced atomically, and only then are older
//! ones deleted. At every moment the directory named by `latest` is complete: a process killed
//! while writing leaves a `.tmp` directory beside it, which the next write replaces.
//!
//! With early stopping, `checkpoints/best` names the epoch checkpoint of the best epoch so far,
//! written the same way (the name after the directory is complete); pruning keeps the
//! directory `best` names as well as the one `latest` names. With `checkpoint.keep_best = k`,
//! `checkpoints/ranking.json` lists the `k` best epochs' checkpoints ([`ranking`]), and
//! pruning keeps those too.

use std::path::{Path, PathBuf};

use burn::optim::ModuleOptimizer;
use burn::store::{BurnpackStore, ModuleSnapshot};

use super::decide::{rank, Schedule};
use crate::config::KeepBest;
use crate::error::Error;
use crate::record::{write_atomic, RankedCheckpoint};

mod files;
mod ranking;
mod read;
mod state;

pub(crate) use files::{Extras, File, Manifest};

pub use ranking::best_checkpoints;
pub use read::{latest_checkpoint, Checkpoint};
pub use state::CheckpointState;

/// Writes checkpoints for one run, keeping the most recent.
#[derive(Debug, Clone)]
pub struct Checkpointer {
    dir: PathBuf,
    /// `checkpoint.keep_best`: how many of the best epochs' checkpoints to keep, by which
    /// figure.
    keep_best: Option<KeepBest>,
    /// A run's checkpointer ([`Checkpointer::for_run`]): what each of its checkpoints holds
    /// besides the files every one holds. `None` for [`Checkpointer::new`]'s, whose caller
    /// chooses what it saves.
    run: Option<Extras>,
}

/// State a run keeps beside its model in each checkpoint (`[train.ema]`'s average): written
/// into the checkpoint's directory before it is complete.
pub trait SavedBeside {
    /// Writes it into the checkpoint directory `dir`.
    fn save(&self, dir: &Path) -> Result<(), Error>;
}

/// What a checkpoint is besides the latest: early stopping's best, and its epoch's value of
/// the figure `checkpoint.keep_best` ranks by.
#[derive(Debug, Clone, Copy, Default)]
pub struct Marks {
    /// It becomes `checkpoints/best` (early stopping's).
    pub best: bool,
    /// The ranked figure's value at its epoch's end.
    pub ranked: Option<f64>,
}

impl Checkpointer {
    /// Checkpoints under `<run_dir>/checkpoints`.
    pub fn new(run_dir: &Path) -> Self {
        Self {
            dir: run_dir.join("checkpoints"),
            keep_best: None,
            run: None,
        }
    }

    /// The checkpoints of a run under `config` in `run_dir`: keeping its best as
    /// `checkpoint.keep_best` says, each made complete only when it holds every file a resume
    /// under `config` reads.
    pub(crate) fn for_run(run_dir: &Path, config: &crate::config::RunConfig) -> Self {
        Self {
            run: Some(Extras::of(config)),
            ..Self::new(run_dir).keeping_best(config.checkpoint.kept_best().as_ref())
        }
    }

    /// Also keeps the best epochs' checkpoints, as `keep_best` says.
    pub fn keeping_best(mut self, keep_best: Option<&KeepBest>) -> Self {
        self.keep_best = keep_best.cloned();
        self
    }

    /// The figure the kept checkpoints are ranked by, if they are.
    pub fn ranks_by(&self) -> Option<&str> {
        self.keep_best.as_ref().map(|k| k.monitor.as_str())
    }

    /// Saves `model` and `optimizer` as the state after `epoch` (0: before training), `step`
    /// optimizer steps into the run.
    pub fn save<M: ModuleSnapshot>(
        &self,
        epoch: usize,
        step: usize,
        model: &M,
        optimizer: &ModuleOptimizer,
    ) -> Result<PathBuf, Error> {
        self.save_state(&CheckpointState::at_epoch(epoch, step), model, optimizer)
    }

    /// Saves `model`, `optimizer` and `state`.
    pub fn save_state<M: ModuleSnapshot>(
        &self,
        state: &CheckpointState,
        model: &M,
        optimizer: &ModuleOptimizer,
    ) -> Result<PathBuf, Error> {
        self.save_run(state, model, optimizer, &[], Marks::default())
    }

    /// Saves `model`, `optimizer`, `state` and what the run keeps `beside` them (the
    /// learning-rate schedule, `[train.ema]`'s average); as `marks` says, also names the
    /// checkpoint `checkpoints/best`, and ranks it among the best kept.
    pub fn save_run<M: ModuleSnapshot>(
        &self,
        state: &CheckpointState,
        model: &M,
        optimizer: &ModuleOptimizer,
        beside: &[&dyn SavedBeside],
        marks: Marks,
    ) -> Result<PathBuf, Error> {
        let name = state.name();
        let target = self.dir.join(&name);
        let tmp = self.dir.join(format!("{name}.tmp"));
        let io = |path: &Path, e: std::io::Error| Error::io(path, e);
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp).map_err(|e| io(&tmp, e))?;
        }
        std::fs::create_dir_all(&tmp).map_err(|e| io(&tmp, e))?;
        write_files(&tmp, state, model, optimizer)?;
        for part in beside {
            part.save(&tmp)?;
        }
        // The list of what the checkpoint holds, last: a copy takes these files and no other.
        Manifest::write(&tmp)?;
        // Before the checkpoint is complete: each file on the list its run needs is there.
        let needed = |f: &File| self.run.is_some_and(|extras| f.written(extras));
        if let Some(file) = File::ALL
            .into_iter()
            .find(|f| needed(f) && !f.in_dir(&tmp).is_file())
        {
            return Err(Error::CheckpointSave {
                dir: tmp,
                what: file.name(),
                message: "was not written, and a resume of this run reads it".into(),
            });
        }
        put_in_place(&tmp, &target)?;
        let latest = self.dir.join("latest");
        write_atomic(&latest, name.as_bytes()).map_err(|e| io(&latest, e))?;
        if marks.best {
            let best = self.dir.join("best");
            write_atomic(&best, name.as_bytes()).map_err(|e| io(&best, e))?;
        }
        crate::failpoint::pass("saved");
        let ranking = self.rank(state, &name, marks.ranked)?;
        crate::failpoint::pass("ranked");
        let best = std::fs::read_to_string(self.dir.join("best")).unwrap_or_default();
        let mut keep = vec![name.as_str(), best.trim()];
        keep.extend(ranking.iter().map(|r| r.name.as_str()));
        self.prune(&keep)?;
        Ok(target)
    }

    /// The ranking of the best checkpoints once checkpoint `name` (of `state`, whose epoch
    /// scored `value`) is on disk, written if it changed.
    fn rank(
        &self,
        state: &CheckpointState,
        name: &str,
        value: Option<f64>,
    ) -> Result<Vec<RankedCheckpoint>, Error> {
        let ranking = ranking::read_ranking(&self.dir)?;
        let Some(keep) = &self.keep_best else {
            return Ok(ranking);
        };
        // A run that ranks its checkpoints has its ranking on disk from its first checkpoint
        // on, empty until an epoch is ranked: a resume then tells a lost ranking from one not
        // yet written, where a kill before the first epoch's ranking left older checkpoints.
        let on_disk = self.dir.join(ranking::RANKING_FILE).exists();
        let Some(value) = value else {
            if !on_disk {
                ranking::write_ranking(&self.dir, &ranking)?;
            }
            return Ok(ranking);
        };
        let new = RankedCheckpoint {
            name: name.to_string(),
            epoch: state.epoch,
            value,
        };
        let ranked = rank(&ranking, new, keep.keep_best, keep.mode);
        if ranked != ranking || !on_disk {
            ranking::write_ranking(&self.dir, &ranked)?;
        }
        Ok(ranked)
    }

    /// Deletes every checkpoint directory but those in `keep`.
    fn prune(&self, keep: &[&str]) -> Result<(), Error> {
        let entries = std::fs::read_dir(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let checkpoint = name.starts_with("epoch-") || name.starts_with("step-");
            if checkpoint && !keep.contains(&name.as_ref()) && !name.ends_with(".tmp") {
                let path = entry.path();
                std::fs::remove_dir_all(&path).map_err(|e| Error::io(&path, e))?;
            }
        }
        Ok(())
    }
}

/// Why `name`, read back from a run's own file (`checkpoints/latest`, `best`, `ranking.json`,
/// `summary.json`), is not the name of one of its checkpoint directories (`epoch-<N>`,
/// `step-<S>`), if it is not.
pub(crate) fn checkpoint_name(name: &str) -> Result<(), &'static str> {
    crate::record::names::plain(name)?;
    let number = (name
        .strip_prefix("epoch-")
        .or_else(|| name.strip_prefix("step-")))
    .ok_or("not a checkpoint directory's name (epoch-N or step-N)")?;
    match !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()) {
        true => Ok(()),
        false => Err("not a checkpoint directory's name (epoch-N or step-N)"),
    }
}

/// Renames the complete checkpoint `tmp` to `target`, replacing any there.
///
/// One there is swapped out in one step where the filesystem can (Linux's `RENAME_EXCHANGE`),
/// then removed from its temporary name: at no moment is there no checkpoint of that name, so
/// a process killed while a population's member takes another's checkpoint keeps one. Else it
/// is removed first.
fn put_in_place(tmp: &Path, target: &Path) -> Result<(), Error> {
    let io = |path: &Path, e: std::io::Error| Error::io(path, e);
    if target.symlink_metadata().is_ok() {
        if exchange(tmp, target) {
            // The new one is in place: the old, at the temporary name, goes where it can (the
            // next write of this name replaces what is left).
            let _ = std::fs::remove_dir_all(tmp);
            return Ok(());
        }
        std::fs::remove_dir_all(target).map_err(|e| io(target, e))?;
    }
    std::fs::rename(tmp, target).map_err(|e| io(target, e))
}

/// Swaps the directories `a` and `b` in one step; whether it could.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn exchange(a: &Path, b: &Path) -> bool {
    use nix::fcntl::{renameat2, RenameFlags, AT_FDCWD};
    renameat2(AT_FDCWD, a, AT_FDCWD, b, RenameFlags::RENAME_EXCHANGE).is_ok()
}

/// Swaps the directories `a` and `b` in one step; whether it could.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn exchange(_: &Path, _: &Path) -> bool {
    false
}

/// Writes a checkpoint's files into `dir`.
fn write_files<M: ModuleSnapshot>(
    dir: &Path,
    state: &CheckpointState,
    model: &M,
    optimizer: &ModuleOptimizer,
) -> Result<(), Error> {
    save_module(model, dir, File::Model.name(), "model")?;
    optimizer
        .save(File::Optimizer.in_dir(dir))
        .map_err(|e| Error::CheckpointSave {
            dir: dir.to_path_buf(),
            what: "optimizer",
            message: format!("{e:?}"),
        })?;
    let meta = serde_json::to_vec_pretty(state).expect("meta serialises");
    let meta_path = File::Meta.in_dir(dir);
    std::fs::write(&meta_path, meta).map_err(|e| Error::io(&meta_path, e))
}

/// Writes `module` as `file` in the checkpoint directory `dir` (`what` names it in errors).
///
/// Through burn-store, whose file writer reads each parameter back only when it reaches it:
/// Module::save_file copies the whole model first. Measured on W1 (7.1 MiB of weights,
/// largest tensor 4 MiB), the model's part of a checkpoint then holds 8.0 MiB above rest
/// instead of 11.1 MiB. Burn's optimizer record has no such path. The store keeps each
/// parameter's id, which the optimizer's state is keyed by.
pub(super) fn save_module<M: ModuleSnapshot>(
    module: &M,
    dir: &Path,
    file: &str,
    what: &'static str,
) -> Result<(), Error> {
    let mut store = BurnpackStore::from_file(dir.join(file)).overwrite(true);
    (module.save_into(&mut store)).map_err(|e| Error::CheckpointSave {
        dir: dir.to_path_buf(),
        what,
        message: format!("{e:?}"),
    })
}

/// The schedule is kept beside the model in each checkpoint.
impl SavedBeside for Schedule {
    fn save(&self, dir: &Path) -> Result<(), Error> {
        Schedule::save(self, &File::Schedule.in_dir(dir))
    }
}

#[cfg(test)]
mod tests;
