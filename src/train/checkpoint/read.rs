//! Reading checkpoints back: the one `latest` or `best` names, or one by its directory name,
//! with its state, and its model, optimizer and schedule loaded from it.

use std::path::{Path, PathBuf};

use burn::optim::ModuleOptimizer;
use burn::store::{BurnpackStore, ModuleSnapshot};

use super::files::{Extras, File, Manifest};
use super::ranking::{ranked_dir, read_ranking};
use super::CheckpointState;
use crate::config::RunConfig;
use crate::error::Error;
use crate::train::decide::{read_plateau, Schedule};

/// The names in `<run_dir>/checkpoints`: `best` and `latest` first, then the checkpoints in
/// the order they were written.
fn checkpoint_names(run_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(run_dir.join("checkpoints"))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.ends_with(".tmp") && !n.ends_with(".json"))
                .collect()
        })
        .unwrap_or_default();
    let ranked = read_ranking(&run_dir.join("checkpoints")).unwrap_or_default();
    names.extend((1..=ranked.len()).map(|n| format!("best-{n}")));
    names.sort_by_key(|name| {
        let (kind, n) = name.split_once('-').unwrap_or((name, ""));
        let pointer = matches!(name.as_str(), "best" | "latest") || name.starts_with("best-");
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
    /// stopping; else `best-1`, with `checkpoint.keep_best`.
    pub fn best(run_dir: &Path) -> Result<Self, Error> {
        Self::named(run_dir, "best")
    }

    /// The checkpoint that `<run_dir>/checkpoints/<pointer>` names; for `best` without early
    /// stopping's pointer, the best that `checkpoint.keep_best` kept.
    fn named(run_dir: &Path, pointer: &str) -> Result<Self, Error> {
        let latest = run_dir.join("checkpoints").join(pointer);
        if pointer == "best" && !latest.exists() {
            if let Some(dir) = ranked_dir(run_dir, 1)? {
                return Self::at(dir, pointer);
            }
        }
        crate::record::names::inside(run_dir, &latest).map_err(|why| {
            Error::checkpoint(&latest, format!("{why}; nothing was read or changed"))
        })?;
        let name = std::fs::read_to_string(&latest).map_err(|e| {
            let message = match (e.kind(), pointer) {
                (std::io::ErrorKind::NotFound, "latest") => {
                    "missing: the run has no complete checkpoint to resume from".to_string()
                }
                (std::io::ErrorKind::NotFound, _) => format!(
                    "missing: the run kept no {pointer} checkpoint (early stopping or \
                     checkpoint.keep_best writes one)"
                ),
                _ => e.to_string(),
            };
            Error::checkpoint(&latest, message)
        })?;
        let name = name.trim();
        if let Err(why) = super::checkpoint_name(name) {
            // What it holds is shown cut short: a pointer is a short name, not a file to echo.
            let shown: String = name.chars().take(40).collect();
            let cut = if shown.len() < name.len() { "..." } else { "" };
            let message = format!("names {shown:?}{cut}, which is {why}");
            return Err(Error::checkpoint(&latest, message));
        }
        Self::at(latest.with_file_name(name), pointer)
    }

    /// The checkpoint `name` names in `<run_dir>/checkpoints`: `latest`, `best`, `best-N`
    /// (the N-th best that `checkpoint.keep_best` kept), or a checkpoint directory
    /// (`epoch-3`, `step-120`). An unknown name is a config error that lists the names there
    /// are.
    pub fn open(run_dir: &Path, name: &str) -> Result<Self, Error> {
        if matches!(name, "latest" | "best") {
            return Self::named(run_dir, name);
        }
        let rank = name
            .strip_prefix("best-")
            .and_then(|n| n.parse::<usize>().ok());
        if let Some(dir) = rank.map(|n| ranked_dir(run_dir, n)).transpose()?.flatten() {
            return Self::at(dir, name);
        }
        let dir = run_dir.join("checkpoints").join(name);
        let plain = crate::record::names::plain(name).is_ok();
        if plain && File::Meta.in_dir(&dir).is_file() {
            return Self::at(dir, name);
        }
        let names = checkpoint_names(run_dir);
        Err(Error::Usage(crate::error::UsageError::new(
            "--checkpoint",
            format!(
                "no checkpoint named {name:?} in {} (there are: {})",
                run_dir.join("checkpoints").display(),
                match names.is_empty() {
                    true => "none".to_string(),
                    false => names.join(", "),
                }
            ),
        )))
    }

    /// The checkpoint `name` that a run's own file `record` (its `summary.json`) names. One
    /// that is gone is an [`Error::Checkpoint`] naming where it should be and the file that
    /// names it: no `--checkpoint` was given to blame.
    pub fn recorded(run_dir: &Path, name: &str, record: &Path) -> Result<Self, Error> {
        let dir = run_dir.join("checkpoints").join(name);
        let plain = crate::record::names::plain(name).is_ok();
        if !plain || !File::Meta.in_dir(&dir).is_file() {
            let names = checkpoint_names(run_dir);
            let message = format!(
                "missing: {} names checkpoint {name:?} as the run's final weights, and it is \
                 incomplete or gone; choose one with --checkpoint (there are: {})",
                record.display(),
                match names.is_empty() {
                    true => "none".to_string(),
                    false => names.join(", "),
                }
            );
            return Err(Error::checkpoint(File::Meta.in_dir(&dir), message));
        }
        Self::at(dir, name)
    }

    /// The checkpoint in `dir`, reached through `pointer` (`latest`, `best`, or its own name).
    fn at(dir: PathBuf, pointer: &str) -> Result<Self, Error> {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Nothing is read through a link out of the run: its directory first.
        let run = crate::record::names::run_of_checkpoint(&dir);
        crate::record::names::inside(&run, &dir).map_err(|why| {
            Error::checkpoint(&dir, format!("{why}; nothing was read or changed"))
        })?;
        let meta = File::Meta.in_dir(&dir);
        let text = std::fs::read(&meta).map_err(|e| {
            let message = match e.kind() {
                std::io::ErrorKind::NotFound => format!(
                    "missing (checkpoints/{pointer} names {name}, which is incomplete or gone)"
                ),
                _ => e.to_string(),
            };
            Error::checkpoint(&meta, message)
        })?;
        let state: CheckpointState = crate::record::parse_json(&text)
            .map_err(|e| Error::checkpoint(&meta, format!("not a checkpoint's state: {e}")))?;
        if let Some(why) = state.invalid() {
            let message = format!("not a checkpoint's state: {why}; nothing was changed");
            return Err(Error::checkpoint(&meta, message));
        }
        // Each file the checkpoint lists, at its size and inside its run (a checkpoint from
        // before the list: the two every one holds).
        Manifest::files_of(&dir)?;
        for file in [File::Model, File::Optimizer] {
            let path = file.in_dir(&dir);
            if !path.is_file() {
                return Err(Error::checkpoint(&path, "missing".to_string()));
            }
        }
        Ok(Self { dir, state })
    }

    /// Copies this checkpoint into the run directory `run_dir`, under its own name, and makes
    /// it that run's `latest`: the files its manifest lists and the manifest (every file of a
    /// checkpoint from before the list), written under a temporary name and renamed into place
    /// as a run's own checkpoint is. A run resumed from `run_dir` then continues from it. A
    /// checkpoint of that name there is replaced; the run's `best` and its ranking of kept
    /// checkpoints are left as they are.
    pub fn copy_into(&self, run_dir: &Path) -> Result<Self, Error> {
        let name = (self.dir.file_name()).unwrap_or_default().to_owned();
        let checkpoints = run_dir.join("checkpoints");
        Manifest::copy(&self.dir, &checkpoints.join(&name))?;
        let latest = checkpoints.join("latest");
        let pointer = name.to_string_lossy();
        crate::record::write_atomic(&latest, pointer.as_bytes())
            .map_err(|e| Error::io(&latest, e))?;
        Self::latest(run_dir)
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
        self.load_module(model, File::Model.name())
    }

    /// Loads the module saved as `file` in this checkpoint (`model.bpk`, `ema.bpk`) into
    /// `module`.
    pub fn load_module<M: ModuleSnapshot>(&self, module: &mut M, file: &str) -> Result<(), Error> {
        let path = self.dir.join(file);
        let mut store = BurnpackStore::from_file(&path);
        (module.load_from(&mut store))
            .map_err(|e| Error::checkpoint(&path, format!("cannot be loaded: {e}")))?;
        Ok(())
    }

    /// Every saved weight by its parameter path, as f32: to compare two runs' results
    /// without building their model.
    pub fn weights(&self) -> Result<std::collections::BTreeMap<String, Vec<f32>>, Error> {
        use burn::store::ModuleStore;
        let path = File::Model.in_dir(&self.dir);
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

    /// Reads the weights and the optimizer's state through, so that a truncated or corrupt
    /// one is found before a resumed run touches anything.
    pub fn verify(&self) -> Result<(), Error> {
        [File::Model, File::Optimizer]
            .into_iter()
            .try_for_each(|file| self.verify_file(file, Extras::default()))
    }

    /// Reads every file a run under `config` continues from through (`File::ALL`, the
    /// checkpoint's one list of files), so that one missing, truncated, corrupt or out of
    /// range is found before a resumed run touches anything: the model, the optimizer, the
    /// schedule (and a plateau's state), the moving average and, where
    /// `checkpoint.keep_best` ranks the checkpoints, their ranking.
    pub fn verify_for(&self, config: &RunConfig) -> Result<(), Error> {
        for file in File::ALL {
            self.verify_file(file, Extras::of(config))?;
        }
        if config.checkpoint.keep_best.is_some() {
            self.ranking_kept()?;
        }
        Ok(())
    }

    /// Reads `file` of this checkpoint through, as a run that keeps `extras` continues from
    /// it: one missing, truncated, corrupt or out of range is an error naming it. A schedule's
    /// state (and so a plateau's) may be absent from a checkpoint written before schedules were
    /// saved, whose run had none.
    fn verify_file(&self, file: File, extras: Extras) -> Result<(), Error> {
        let path = file.in_dir(&self.dir);
        let unreadable =
            |e: &dyn std::fmt::Debug| Error::checkpoint(&path, format!("cannot be read: {e:?}"));
        let schedule_kept = File::Schedule.in_dir(&self.dir).exists();
        match file {
            // Parsed and checked where the checkpoint was opened.
            File::Manifest | File::Meta => Ok(()),
            File::Model => self.weights().map(drop),
            File::Optimizer => burn::optim::record::OptimizerRecord::load(&path)
                .map(drop)
                .map_err(|e| unreadable(&e)),
            File::Schedule if schedule_kept => {
                burn::optim::lr_scheduler::LrSchedulerRecord::load(&path)
                    .map(drop)
                    .map_err(|e| unreadable(&e))
            }
            File::Plateau if schedule_kept && extras.plateau => read_plateau(&path).map(drop),
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

    /// Whether the run's ranking of its best checkpoints can be trusted to delete by: readable,
    /// and present wherever checkpoints besides the latest are kept. Nothing is deleted on a
    /// guess.
    fn ranking_kept(&self) -> Result<(), Error> {
        let dir = self.dir.parent().unwrap_or(&self.dir);
        read_ranking(dir)?;
        if dir.join(super::ranking::RANKING_FILE).exists() {
            return Ok(());
        }
        let latest = self.dir.file_name().unwrap_or_default();
        let mut others: Vec<String> = std::fs::read_dir(dir)
            .map_err(|e| Error::io(dir, e))?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| (n.starts_with("epoch-") || n.starts_with("step-")) && !n.ends_with(".tmp"))
            .filter(|n| n.as_str() != latest)
            .collect();
        others.sort();
        if others.is_empty() {
            return Ok(());
        }
        let path = dir.join(super::ranking::RANKING_FILE);
        Err(Error::checkpoint(
            &path,
            format!(
                "missing, and checkpoint.keep_best would delete the checkpoints it does not \
                 rank ({}): restore it, or move away the ones not to keep",
                others.join(", ")
            ),
        ))
    }

    /// `schedule` continued from the saved state. A checkpoint without one was written before
    /// schedules existed, so its run had none (resume refuses to add one): the constant rate
    /// has no state to restore.
    pub fn load_schedule(&self, schedule: Schedule) -> Result<Schedule, Error> {
        let path = File::Schedule.in_dir(&self.dir);
        if !path.exists() {
            return Ok(schedule);
        }
        let current = self.state.lr.unwrap_or(schedule.current());
        schedule.load(&path, current)
    }

    /// `optimizer` with the saved state.
    pub fn load_optimizer(&self, optimizer: ModuleOptimizer) -> Result<ModuleOptimizer, Error> {
        let path = File::Optimizer.in_dir(&self.dir);
        optimizer
            .load(&path)
            .map_err(|e| Error::checkpoint(&path, format!("cannot be loaded: {e:?}")))
    }
}
