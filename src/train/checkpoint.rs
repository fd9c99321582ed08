//! Checkpoints: model and optimizer state after each epoch (and before the first), so a run
//! that stops, for a memory limit, a crash or a kill, keeps its last good state on disk and can
//! resume from it ([`Checkpoint::latest`]).
//!
//! Layout: `<run>/checkpoints/epoch-<N>/{model.bpk, optimizer.bpk, schedule.bpk, meta.json}`
//! after epoch N (and `step-<S>/` after global step S, inside an epoch, with
//! `checkpoint.every_steps`), written under a temporary name and renamed into place, then
//! `checkpoints/latest` (the directory name) is replaced atomically, and only then are older
//! ones deleted. At every moment the directory named by `latest` is complete: a process killed
//! while writing leaves a `.tmp` directory beside it, which the next write replaces.
//!
//! With early stopping, `checkpoints/best` names the epoch checkpoint of the best epoch so far,
//! written the same way (the name after the directory is complete); pruning keeps the
//! directory `best` names as well as the one `latest` names.

use std::path::{Path, PathBuf};

use burn::optim::ModuleOptimizer;
use burn::store::{BurnpackStore, ModuleSnapshot};
use serde::{Deserialize, Serialize};

use super::decide::{EarlyStopState, Schedule};
use super::precision::LossScaler;
use crate::error::Error;
use crate::memory::write_atomic;
use crate::task::metrics::HostSums;

/// Writes checkpoints for one run, keeping the most recent.
#[derive(Debug, Clone)]
pub struct Checkpointer {
    dir: PathBuf,
}

/// `meta.json`: where in the run a checkpoint stands, and what a resume restores besides the
/// weights and the optimizer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckpointState {
    /// Epochs completed.
    pub epoch: usize,
    /// Optimizer steps completed in the run.
    pub step: usize,
    /// Optimizer steps completed in the epoch after `epoch` (0 at an epoch's end).
    pub step_in_epoch: usize,
    /// How many micro-batches each loader batch is cut into: 1, doubled by each shrink under
    /// a memory limit.
    #[serde(default = "one")]
    pub layout_factor: usize,
    /// The dynamic loss scaler, with loss scaling on.
    #[serde(default)]
    pub loss_scaler: Option<LossScaler>,
    /// Steps skipped in the run for non-finite gradients.
    #[serde(default)]
    pub skipped_steps: u64,
    /// Inside an epoch: the epoch's loss and metric sums so far.
    #[serde(default)]
    pub epoch_sums: Option<HostSums>,
    /// Inside an epoch: steps the epoch skipped so far.
    #[serde(default)]
    pub epoch_skipped: u64,
    /// The learning rate of the latest step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lr: Option<f64>,
    /// Steps clipped in the run.
    #[serde(default)]
    pub clipped_steps: u64,
    /// Inside an epoch: steps the epoch clipped so far.
    #[serde(default)]
    pub epoch_clipped: u64,
    /// With early stopping: its state (the best epoch and the patience used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_stop: Option<EarlyStopState>,
}

fn one() -> usize {
    1
}

impl CheckpointState {
    /// The state after `epoch` epochs and `step` optimizer steps, nothing else recorded.
    pub fn at_epoch(epoch: usize, step: usize) -> Self {
        Self {
            epoch,
            step,
            layout_factor: 1,
            ..Self::default()
        }
    }

    /// The checkpoint's directory name: `epoch-<N>` at an epoch's end, `step-<S>` inside one.
    fn name(&self) -> String {
        match self.step_in_epoch {
            0 => format!("epoch-{}", self.epoch),
            _ => format!("step-{}", self.step),
        }
    }
}

impl Checkpointer {
    /// Checkpoints under `<run_dir>/checkpoints`.
    pub fn new(run_dir: &Path) -> Self {
        Self {
            dir: run_dir.join("checkpoints"),
        }
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
        self.save_run(state, model, optimizer, None, false)
    }

    /// Saves `model`, `optimizer`, the learning-rate `schedule` and `state`; with `best`, also
    /// names the checkpoint `checkpoints/best`.
    pub fn save_run<M: ModuleSnapshot>(
        &self,
        state: &CheckpointState,
        model: &M,
        optimizer: &ModuleOptimizer,
        schedule: Option<&Schedule>,
        best: bool,
    ) -> Result<PathBuf, Error> {
        let name = state.name();
        let target = self.dir.join(&name);
        let tmp = self.dir.join(format!("{name}.tmp"));
        let io = |path: &Path, e: std::io::Error| Error::io(path, e);
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp).map_err(|e| io(&tmp, e))?;
        }
        std::fs::create_dir_all(&tmp).map_err(|e| io(&tmp, e))?;
        write_files(&tmp, state, model, optimizer, schedule)?;
        if target.exists() {
            std::fs::remove_dir_all(&target).map_err(|e| io(&target, e))?;
        }
        std::fs::rename(&tmp, &target).map_err(|e| io(&target, e))?;
        let latest = self.dir.join("latest");
        write_atomic(&latest, name.as_bytes()).map_err(|e| io(&latest, e))?;
        if best {
            let best = self.dir.join("best");
            write_atomic(&best, name.as_bytes()).map_err(|e| io(&best, e))?;
        }
        let best = std::fs::read_to_string(self.dir.join("best")).unwrap_or_default();
        self.prune(&[name.as_str(), best.trim()])?;
        Ok(target)
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

/// Writes a checkpoint's files into `dir`.
fn write_files<M: ModuleSnapshot>(
    dir: &Path,
    state: &CheckpointState,
    model: &M,
    optimizer: &ModuleOptimizer,
    schedule: Option<&Schedule>,
) -> Result<(), Error> {
    // Through burn-store, whose file writer reads each parameter back only when it reaches
    // it: Module::save_file copies the whole model first. Measured on W1 (7.1 MiB of
    // weights, largest tensor 4 MiB), the model's part of a checkpoint then holds 8.0 MiB
    // above rest instead of 11.1 MiB. Burn's optimizer record has no such path. The store
    // keeps each parameter's id, which the optimizer's state is keyed by.
    let failed = |what: &str, e: &dyn std::fmt::Debug| {
        Error::Device(format!(
            "saving the {what} checkpoint in {}: {e:?}",
            dir.display()
        ))
    };
    let mut store = BurnpackStore::from_file(dir.join("model.bpk")).overwrite(true);
    model
        .save_into(&mut store)
        .map_err(|e| failed("model", &e))?;
    optimizer
        .save(dir.join("optimizer.bpk"))
        .map_err(|e| failed("optimizer", &e))?;
    if let Some(schedule) = schedule {
        schedule
            .save(&dir.join(SCHEDULE_FILE))
            .map_err(|e| failed("schedule", &e))?;
    }
    let meta = serde_json::to_vec_pretty(state).expect("meta serialises");
    let meta_path = dir.join("meta.json");
    std::fs::write(&meta_path, meta).map_err(|e| Error::io(&meta_path, e))
}

/// The learning-rate schedule's state in a checkpoint.
const SCHEDULE_FILE: &str = "schedule.bpk";

/// The names in `<run_dir>/checkpoints`: `best` and `latest` first, then the checkpoints in
/// the order they were written.
fn checkpoint_names(run_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(run_dir.join("checkpoints"))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.ends_with(".tmp"))
                .collect()
        })
        .unwrap_or_default();
    names.sort_by_key(|name| {
        let (kind, n) = name.split_once('-').unwrap_or((name, ""));
        let pointer = matches!(name.as_str(), "best" | "latest");
        (!pointer, kind.to_string(), n.parse::<u64>().unwrap_or(0))
    });
    names
}

/// The directory of the latest complete checkpoint under `run_dir`, if any.
pub fn latest_checkpoint(run_dir: &Path) -> Option<PathBuf> {
    Checkpoint::latest(run_dir).ok().map(|c| c.dir)
}

/// A checkpoint read back from disk, to resume from.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// Its directory.
    pub dir: PathBuf,
    /// Its `meta.json`.
    pub state: CheckpointState,
}

impl Checkpoint {
    /// The checkpoint `<run_dir>/checkpoints/latest` names, with its state read. A missing or
    /// unreadable file is an [`Error::Checkpoint`] naming it.
    pub fn latest(run_dir: &Path) -> Result<Self, Error> {
        Self::named(run_dir, "latest")
    }

    /// The checkpoint `<run_dir>/checkpoints/best` names: the best epoch's, with early
    /// stopping.
    pub fn best(run_dir: &Path) -> Result<Self, Error> {
        Self::named(run_dir, "best")
    }

    /// The checkpoint that `<run_dir>/checkpoints/<pointer>` names.
    fn named(run_dir: &Path, pointer: &str) -> Result<Self, Error> {
        let latest = run_dir.join("checkpoints").join(pointer);
        let name = std::fs::read_to_string(&latest).map_err(|e| {
            let message = match (e.kind(), pointer) {
                (std::io::ErrorKind::NotFound, "latest") => {
                    "missing: the run has no complete checkpoint to resume from".to_string()
                }
                (std::io::ErrorKind::NotFound, _) => format!(
                    "missing: the run kept no {pointer} checkpoint (early stopping writes one)"
                ),
                _ => e.to_string(),
            };
            Error::checkpoint(&latest, message)
        })?;
        let name = name.trim();
        let valid = (name.starts_with("epoch-") || name.starts_with("step-"))
            && !name.contains(['/', '\\']);
        if !valid {
            let message = format!("names {name:?}, which is not a checkpoint directory");
            return Err(Error::checkpoint(&latest, message));
        }
        Self::at(latest.with_file_name(name), pointer)
    }

    /// The checkpoint `name` names in `<run_dir>/checkpoints`: `latest`, `best`, or a
    /// checkpoint directory (`epoch-3`, `step-120`). An unknown name is a config error that
    /// lists the names there are.
    pub fn open(run_dir: &Path, name: &str) -> Result<Self, Error> {
        if matches!(name, "latest" | "best") {
            return Self::named(run_dir, name);
        }
        let dir = run_dir.join("checkpoints").join(name);
        let plain = !name.is_empty() && !name.contains(['/', '\\']) && name != "..";
        if plain && dir.join("meta.json").is_file() {
            return Self::at(dir, name);
        }
        let names = checkpoint_names(run_dir);
        Err(Error::Config(crate::config::ConfigError {
            origin: "--checkpoint".into(),
            key: None,
            message: format!(
                "no checkpoint named {name:?} in {} (there are: {})",
                run_dir.join("checkpoints").display(),
                match names.is_empty() {
                    true => "none".to_string(),
                    false => names.join(", "),
                }
            ),
        }))
    }

    /// The checkpoint in `dir`, reached through `pointer` (`latest`, `best`, or its own name).
    fn at(dir: PathBuf, pointer: &str) -> Result<Self, Error> {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let meta = dir.join("meta.json");
        let text = std::fs::read(&meta).map_err(|e| {
            let message = match e.kind() {
                std::io::ErrorKind::NotFound => format!(
                    "missing (checkpoints/{pointer} names {name}, which is incomplete or gone)"
                ),
                _ => e.to_string(),
            };
            Error::checkpoint(&meta, message)
        })?;
        let state: CheckpointState = serde_json::from_slice(&text)
            .map_err(|e| Error::checkpoint(&meta, format!("not a checkpoint's state: {e}")))?;
        for file in ["model.bpk", "optimizer.bpk"] {
            let path = dir.join(file);
            if !path.is_file() {
                return Err(Error::checkpoint(&path, "missing".to_string()));
            }
        }
        Ok(Self { dir, state })
    }

    /// One line for the terminal and the `resume` snapshot.
    pub fn describe(&self) -> String {
        let state = &self.state;
        let name = self
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match state.step_in_epoch {
            0 => format!(
                "resuming from checkpoints/{name}: {} epochs, {} steps done",
                state.epoch, state.step
            ),
            n => format!(
                "resuming from checkpoints/{name}: {} epochs and {n} steps of epoch {}, {} steps \
                 done",
                state.epoch,
                state.epoch + 1,
                state.step
            ),
        }
    }

    /// Loads the saved weights (and parameter ids) into `model`.
    pub fn load_model<M: ModuleSnapshot>(&self, model: &mut M) -> Result<(), Error> {
        let path = self.dir.join("model.bpk");
        let mut store = BurnpackStore::from_file(&path);
        model
            .load_from(&mut store)
            .map_err(|e| Error::checkpoint(&path, format!("cannot be loaded: {e}")))?;
        Ok(())
    }

    /// Every saved weight by its parameter path, as f32: to compare two runs' results
    /// without building their model.
    pub fn weights(&self) -> Result<std::collections::BTreeMap<String, Vec<f32>>, Error> {
        use burn::store::ModuleStore;
        let path = self.dir.join("model.bpk");
        let bad =
            |e: &dyn std::fmt::Display| Error::checkpoint(&path, format!("cannot be read: {e}"));
        let mut store = BurnpackStore::from_file(&path);
        let tensors = store.get_all_tensors().map_err(|e| bad(&e))?;
        let mut out = std::collections::BTreeMap::new();
        for (name, tensor) in tensors {
            let data = burn::store::bridge::to_data(tensor).map_err(|e| bad(&e))?;
            let values = data
                .convert::<f32>()
                .try_to_vec::<f32>()
                .map_err(|e| bad(&format!("{e:?}")))?;
            out.insert(name.clone(), values);
        }
        Ok(out)
    }

    /// Reads both state files through, so that a truncated or corrupt one is found before a
    /// resumed run touches anything.
    pub fn verify(&self) -> Result<(), Error> {
        self.weights()?;
        let path = self.dir.join("optimizer.bpk");
        burn::optim::record::OptimizerRecord::load(&path)
            .map_err(|e| Error::checkpoint(&path, format!("cannot be read: {e:?}")))?;
        Ok(())
    }

    /// `schedule` continued from the saved state. A checkpoint without one was written before
    /// schedules existed, so its run had none (resume refuses to add one): the constant rate
    /// has no state to restore.
    pub fn load_schedule(&self, schedule: Schedule) -> Result<Schedule, Error> {
        let path = self.dir.join(SCHEDULE_FILE);
        if !path.exists() {
            return Ok(schedule);
        }
        let current = self.state.lr.unwrap_or(schedule.current());
        schedule
            .load(&path, current)
            .map_err(|e| Error::checkpoint(&path, format!("cannot be loaded: {e}")))
    }

    /// `optimizer` with the saved state.
    pub fn load_optimizer(&self, optimizer: ModuleOptimizer) -> Result<ModuleOptimizer, Error> {
        let path = self.dir.join("optimizer.bpk");
        optimizer
            .load(&path)
            .map_err(|e| Error::checkpoint(&path, format!("cannot be loaded: {e:?}")))
    }
}

#[cfg(test)]
mod tests;
