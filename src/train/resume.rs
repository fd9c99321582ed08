//! Resuming a run from its latest checkpoint: the config checked against the run's own, and the
//! figures of the epochs already done read back from `snapshots.jsonl`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use burn::tensor::Device;

use super::checkpoint::Checkpoint;
use super::run_dir::{self, code_task};
use super::stats::Stats;
use super::{Layout, MemoryGuard, Prepared};
use crate::config::TASK_SECTIONS;
use crate::config::{to_toml, ConfigError, Invalid, ModelConfig, RunConfig};
use crate::error::{Error, UsageError};
use crate::memory::MemorySource;
use crate::record::{current_epochs, read_snapshots, RunStatus, RunSummary, Snapshot};

/// Keys that may differ from the run's `config.toml` on resume: they change where the run
/// writes, how long it goes on, or how its memory is governed, not what it computes.
const MAY_CHANGE: &[&str] = &[
    "run.name",
    "run.output_dir",
    "train.epochs",
    "train.gradient_checkpointing",
    "train.offload.",
    "data.num_workers",
    "device.index",
    "memory.",
    "checkpoint.",
];

/// Keys a resume asked to retune ([`Trainer::retune`](crate::Trainer::retune)) may change
/// besides those any resume may change (`train.epochs`, the `[memory]` keys, ...): how the
/// optimizer steps, not the shape of the model or of the optimizer's state, so that the
/// checkpoint loads as it was saved and the new values apply from the run's next step (a
/// schedule goes on from its position at the new rate). Population based training's explore
/// changes these.
pub const MAY_RETUNE: &[&str] = &[
    "train.lr",
    "train.weight_decay",
    "train.betas",
    "train.eps",
    "train.clip_grad_norm",
    "train.clip_grad_value",
    "train.ema.decay",
];

/// A run to continue.
pub(super) struct Resume {
    /// The run directory, written into again.
    pub(super) run_dir: PathBuf,
    /// The checkpoint it continues from.
    pub(super) checkpoint: Checkpoint,
    /// The epoch snapshots of the epochs the checkpoint includes, one per epoch.
    epochs: Vec<Snapshot>,
    /// Highest in-use peak and reserved figure recorded before.
    peaks: (u64, u64),
    /// Seconds the run had been going, as its last snapshot recorded.
    pub(super) elapsed_s: f64,
    /// The keys a retuned resume changed, each `key old -> new`.
    pub(super) retuned: Vec<String>,
}

impl Resume {
    /// Opens `run_dir` to continue under `config`: the config must match the run's own in
    /// everything but [`MAY_CHANGE`], and the latest checkpoint must be readable.
    /// `owned`: the config sections that describe the task being resumed
    /// ([`Task::config_sections`](crate::task::Task::config_sections)).
    /// `resolve`: the kind's reading of `[model]`, applied to the run's own as to `config`'s.
    /// `retune`: the keys of [`MAY_RETUNE`] may differ too.
    pub(super) fn open(
        run_dir: &Path,
        config: &RunConfig,
        owned: &[&str],
        resolve: Option<ResolveModel<'_>>,
        retune: bool,
    ) -> Result<Self, Error> {
        // The run's records (`summary.json`) name its directory, as text: one whose name is
        // not UTF-8 is refused before anything is read or written.
        crate::config::path_text("--resume", run_dir)?;
        let retuned = check_config(run_dir, config, owned, resolve, retune)?;
        let checkpoint = Checkpoint::latest(run_dir)?;
        checkpoint.verify_for(config)?;
        let done = checkpoint.state.epoch;
        // A run stopped after its last checkpoint but before its summary (killed there) is
        // finished by its resume, which trains no epoch; one whose summary says it ended has
        // nothing to resume.
        let ended = RunSummary::read(run_dir)?
            .is_some_and(|s| s.status == RunStatus::Completed && s.epochs >= done);
        if let Some(stopped) = (checkpoint.state.early_stop.as_ref())
            .and_then(|e| e.stopped_at)
            .filter(|_| ended)
        {
            return Err(Error::Usage(UsageError::new(
                format!("--resume {}", run_dir.display()),
                format!(
                    "the run stopped early after epoch {stopped}: its monitored metric had \
                     stopped improving, so there is nothing to resume"
                ),
            )));
        }
        // Inside an epoch (`step_in_epoch` > 0), the run is in epoch `done + 1`, which
        // `train.epochs` must still include.
        let at_epoch_end = checkpoint.state.step_in_epoch == 0;
        if done >= config.train.epochs && (ended || !at_epoch_end || done > config.train.epochs) {
            return Err(Error::Config(ConfigError {
                origin: format!("--resume {}", run_dir.display()),
                key: Some("train.epochs".into()),
                message: format!(
                    "the run has already trained {done} of train.epochs = {} epochs; to train \
                     further, raise it (--set train.epochs={})",
                    config.train.epochs,
                    done + 1
                ),
            }));
        }
        let path = run_dir.join("snapshots.jsonl");
        let snapshots = match path.exists() {
            // A line that is not a snapshot is named with its file and number.
            true => read_snapshots(&path)?,
            false => Vec::new(),
        };
        // The snapshots of the epochs the checkpoint includes: an epoch that a kill cut off
        // after its snapshot, before its checkpoint, is trained again and recorded again.
        let epochs: Vec<Snapshot> = current_epochs(&snapshots)
            .into_iter()
            .filter(|s| s.epoch <= done)
            .cloned()
            .collect();
        let peaks = snapshots.iter().fold((0, 0), |(p, r), s| {
            (
                p.max(s.memory.peak_bytes_in_use),
                r.max(s.memory.bytes_reserved),
            )
        });
        Ok(Self {
            run_dir: run_dir.to_path_buf(),
            checkpoint,
            epochs,
            peaks,
            elapsed_s: snapshots.last().map_or(0.0, |s| s.elapsed_s),
            retuned,
        })
    }

    /// What the `resume` snapshot says: the checkpoint, and the keys retuned.
    pub(super) fn detail(&self) -> String {
        let from = self.checkpoint.describe();
        match self.retuned.as_slice() {
            [] => from,
            keys => format!("{from}; retuned: {}", keys.join(", ")),
        }
    }

    /// The statistics of the epochs done, as the run had them when it stopped.
    pub(super) fn stats(&self) -> Stats {
        let state = &self.checkpoint.state;
        let mut stats = Stats::default();
        for s in &self.epochs {
            let loss = s.loss.unwrap_or(f64::NAN);
            stats.epoch(s.epoch, loss, s.val_loss, s.samples_per_sec.unwrap_or(0.0));
        }
        stats.epochs = state.epoch;
        stats.steps = state.step;
        stats.skipped_steps = state.skipped_steps;
        stats.clipped_steps = state.clipped_steps;
        stats.loss_scale = state.loss_scaler.as_ref().map(|s| s.scale());
        stats.earlier_peaks = self.peaks;
        stats.valid_micro_batch = state.valid_micro_batch;
        stats
    }
}

/// Where a run goes and what it starts from, new or `resume`d: the memory layer prepared on
/// `device` (counting on from where a resumed run stopped), the run directory (made for a new
/// run), and the batch layout (a resumed run keeps the micro-batch a limit left it).
pub(super) fn open_run(
    config: &RunConfig,
    device: &Device,
    resume: Option<&Resume>,
) -> Result<(Prepared, PathBuf, Layout), Error> {
    let prepared = MemoryGuard::prepare(&config.memory, device)?;
    let own_memory = prepared.source() == MemorySource::CubeclPool;
    let mut layout = Layout::new(config.train.batch_size, config.train.accumulation_steps)
        .with_offload(&config.train.offload, own_memory);
    Ok(match resume {
        Some(resume) => {
            layout.factor = resume.checkpoint.state.layout_factor.max(1);
            let prepared = prepared.continuing(resume.elapsed_s);
            (prepared, resume.run_dir.clone(), layout)
        }
        None => {
            let dir = run_dir::create(&config.run.output_dir, &config.run.name)?;
            (prepared, dir, layout)
        }
    })
}

/// Refuses `config` if it differs from `<run_dir>/config.toml` in a key that changes what the
/// run computes (but, with `retune`, in the keys of [`MAY_RETUNE`], which it returns, each as
/// `key old -> new`). A run of a task defined in code has no `[model]` and `[data]` in its file;
/// those sections are then the program's business. `owned`: the sections the task being resumed
/// is described by.
pub(crate) fn check_config(
    run_dir: &Path,
    config: &RunConfig,
    owned: &[&str],
    resolve: Option<ResolveModel<'_>>,
    retune: bool,
) -> Result<Vec<String>, Error> {
    let path = run_dir.join("config.toml");
    // A missing directory, a file in its place, or one without a config: one error.
    if !path.is_file() {
        return Err(Error::not_a_run(run_dir, &path));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let unreadable = |message: String| {
        Error::Config(ConfigError {
            origin: path.display().to_string(),
            key: None,
            message,
        })
    };
    // Through the current validation, so that keys written after the run's version (at their
    // defaults) compare equal to a file that lacks them.
    let mut saved = crate::config::parse(&text, &path.display().to_string(), &[])?;
    // `[model]` through its kind, as `config`'s was: a key the kind reads at its default
    // compares equal to a file that lacks it.
    if let Some(resolve) = resolve.filter(|_| owned.contains(&"model")) {
        resolve(&mut saved.model).map_err(|Invalid { key, message }| ConfigError {
            origin: path.display().to_string(),
            key: Some(key),
            message,
        })?;
    }
    let saved: toml::Table = toml::from_str(&to_toml(&saved)).expect("config is TOML");
    let task_in_code = code_task(&text);
    if let (Some(task), false) = (task_in_code, owned.is_empty()) {
        return Err(unreadable(format!(
            "the run trained task {task}, defined in code: resume it from that program, with \
             Trainer::resume"
        )));
    }
    let now: toml::Table = toml::from_str(&to_toml(config)).expect("config is TOML");
    let (mut before, mut after) = (BTreeMap::new(), BTreeMap::new());
    flatten("", &saved, &mut before);
    flatten("", &now, &mut after);
    let keys: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let show = |v: Option<&toml::Value>| v.map_or("unset".to_string(), |v| v.to_string());
    let mut retuned = Vec::new();
    for key in keys {
        let (old, new) = (before.get(key), after.get(key));
        let section = key.split('.').next().unwrap_or("");
        // A section the task does not read (a task defined in code, a kind with data of its
        // own) says nothing about the run.
        let in_code = TASK_SECTIONS.contains(&section) && !owned.contains(&section);
        let may_change = MAY_CHANGE
            .iter()
            .any(|k| key == k || (k.ends_with('.') && key.starts_with(k)));
        if old == new || in_code || may_change {
            continue;
        }
        if retune && MAY_RETUNE.contains(&key.as_str()) {
            retuned.push(format!("{key} {} -> {}", show(old), show(new)));
            continue;
        }
        let also = match (retune, MAY_RETUNE.contains(&key.as_str())) {
            (true, _) => format!(" and, retuned, {}", MAY_RETUNE.join(", ")),
            // A key a retuned resume may change: say how to ask for one.
            (false, true) => format!(
                "; {key} too, retuned (tidemark train --resume DIR --retune; Trainer::retune)"
            ),
            (false, false) => String::new(),
        };
        return Err(Error::Config(ConfigError {
            origin: format!("--resume {}", run_dir.display()),
            key: Some(key.clone()),
            message: format!(
                "{key} is {} in the run's config.toml but {} here, and a resume keeps the \
                 model, data and optimizer it began with\n  a resume may change only {}{also}",
                show(old),
                show(new),
                may_change_in_words()
            ),
        }));
    }
    Ok(retuned)
}

/// A kind's reading of `[model]`: its keys checked and their defaults filled in
/// ([`Kinds::resolve`](crate::kinds::Kinds::resolve)).
pub(crate) type ResolveModel<'a> = &'a dyn Fn(&mut ModelConfig) -> Result<(), Invalid>;

/// [`MAY_CHANGE`] in words: `train.epochs, ... and the [memory] and [checkpoint] keys`.
fn may_change_in_words() -> String {
    let (keys, sections): (Vec<&str>, Vec<&str>) =
        MAY_CHANGE.iter().partition(|k| !k.ends_with('.'));
    let sections: Vec<String> = sections
        .iter()
        .map(|s| format!("[{}]", s.trim_end_matches('.')))
        .collect();
    format!(
        "{} and the {} keys",
        keys.join(", "),
        match sections.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => String::new(),
        }
    )
}

fn flatten(prefix: &str, table: &toml::Table, out: &mut BTreeMap<String, toml::Value>) {
    for (key, value) in table {
        let path = format!("{prefix}{key}");
        match value {
            toml::Value::Table(inner) => flatten(&format!("{path}."), inner, out),
            value => {
                out.insert(path, value.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigBuilder;

    #[test]
    fn a_config_written_before_newer_keys_existed_still_matches() {
        let dir = tempfile::tempdir().unwrap();
        let config = ConfigBuilder::new("t").build().unwrap();
        let text = to_toml(&config);
        // A run written before `train.betas` and `train.eps` existed has neither key.
        let mut table: toml::Table = toml::from_str(&text).unwrap();
        let train = table["train"].as_table_mut().unwrap();
        assert!(train.remove("betas").is_some() && train.remove("eps").is_some());
        let old = toml::to_string(&table).unwrap();
        std::fs::write(dir.path().join("config.toml"), old).unwrap();
        check_config(dir.path(), &config, TASK_SECTIONS, None, false).unwrap();
        // A key that changes the run is still refused.
        let mut raw = ConfigBuilder::from_config(&config);
        raw.raw_mut().train.betas = Some([0.8, 0.9]);
        let err = check_config(
            dir.path(),
            &raw.build().unwrap(),
            TASK_SECTIONS,
            None,
            false,
        )
        .unwrap_err();
        assert_eq!(err_key(&err), Some("train.betas"));
    }

    fn err_key(e: &Error) -> Option<&str> {
        match e {
            Error::Config(c) => c.key.as_deref(),
            _ => None,
        }
    }
}
