//! `snapshots.jsonl`: one JSON object per line, appended as the run goes.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::trace::StepSample;
use crate::memory::{Action, Breakdown, MemoryUsage};

/// What a snapshot marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    /// After the model and data are ready, before the first step.
    RunStart,
    /// After an epoch's training and validation.
    Epoch,
    /// After the last epoch, once the run's tensors are dropped and the `clear` policy applied.
    RunEnd,
    /// A memory policy acted: `action` and `detail` say how.
    MemoryAction,
    /// A run resumed from a checkpoint after `epoch` epochs (and `step` steps): `detail`
    /// says from which. Snapshots after it replace those of any epoch trained again.
    Resume,
}

/// What a run kept after releasing everything, written into its `run_end` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retained {
    /// Bytes in use after the release minus before the run (negative if less).
    pub retained_bytes_in_use: i64,
    /// Bytes reserved after the release minus before the run.
    pub retained_bytes_reserved: i64,
    /// Process resident set before the run.
    pub rss_before_bytes: u64,
    /// Peak process resident set during the run.
    pub rss_peak_bytes: u64,
    /// Process resident set after the release.
    pub rss_after_bytes: u64,
}

impl Retained {
    /// What `after` holds over `baseline`, with the process's resident set: before the run
    /// (`rss_before`), at its peak and now.
    pub fn since(baseline: &MemoryUsage, after: &MemoryUsage, rss_before: u64) -> Self {
        let diff = |a: u64, b: u64| a as i64 - b as i64;
        Self {
            retained_bytes_in_use: diff(after.bytes_in_use, baseline.bytes_in_use),
            retained_bytes_reserved: diff(after.bytes_reserved, baseline.bytes_reserved),
            rss_before_bytes: rss_before,
            rss_peak_bytes: crate::memory::peak_resident_set_bytes().unwrap_or(0),
            rss_after_bytes: crate::memory::resident_set_bytes().unwrap_or(0),
        }
    }
}

/// One line of `snapshots.jsonl`. Figures that do not apply to an event are `null`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// What this snapshot marks.
    pub event: Event,
    /// Epochs completed (1-based after an epoch; 0 at run start).
    pub epoch: usize,
    /// Optimizer steps completed.
    pub step: usize,
    /// Mean training loss over the epoch.
    pub loss: Option<f64>,
    /// Mean validation loss.
    pub val_loss: Option<f64>,
    /// Training samples per second over the epoch's steps (its first step's start to its
    /// last step's end; validation and the epoch's end are not in it).
    pub samples_per_sec: Option<f64>,
    /// Memory figures. `peak_bytes_in_use` is the high-water mark of this epoch (of setup, at
    /// run start; of the whole run, at run end).
    #[serde(flatten)]
    pub memory: MemoryUsage,
    /// Process resident set now (Linux), whatever the memory source.
    pub rss_bytes: Option<u64>,
    /// Epoch events with loss scaling: the loss scale at the epoch's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_scale: Option<f64>,
    /// Epoch events with loss scaling: optimizer steps skipped this epoch for non-finite
    /// gradients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_steps: Option<u64>,
    /// Epoch events: the learning rate of the epoch's last optimizer step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lr: Option<f64>,
    /// Epoch events with gradient clipping: optimizer steps clipped this epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clipped_steps: Option<u64>,
    /// Epoch events: the epoch's peak by category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<Breakdown>,
    /// Epoch events: memory per optimizer step over the epoch, in a bounded number of points
    /// (see [`StepTrace`](super::trace::StepTrace)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<StepSample>>,
    /// Epoch events: the steps' times and their waits for the device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace: Option<super::Pace>,
    /// Samples per micro-batch at this point (changes when a limit shrinks it).
    pub micro_batch: usize,
    /// Micro-batches per optimizer step at this point.
    pub accumulation_steps: usize,
    /// `memory_action` events: what was done (`reserve`, `cleanup`, `shrink`, `fit`, `limit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
    /// `memory_action` and `resume` events: details, with the figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// `run_end` events: what the run kept after releasing everything.
    #[serde(default, skip_serializing_if = "Option::is_none", flatten)]
    pub retained: Option<Retained>,
    /// Seconds since the run started.
    pub elapsed_s: f64,
    /// Epoch events: the task's metrics, `val_<name>` for validation (`val_accuracy`,
    /// `val_rmse`) and `train_<name>` for training. Last, so that reading a line back gives it
    /// only the keys no other field took.
    #[serde(flatten)]
    pub metrics: BTreeMap<String, Option<f64>>,
}

impl Snapshot {
    /// A snapshot of `event` after `epoch` epochs with `memory`, and nothing else yet: no
    /// epoch figures, step 0, one micro-batch of 1 per step, at time 0. Callers fill in the
    /// rest.
    pub fn new(event: Event, epoch: usize, memory: MemoryUsage) -> Self {
        Snapshot {
            event,
            epoch,
            step: 0,
            loss: None,
            val_loss: None,
            samples_per_sec: None,
            memory,
            rss_bytes: None,
            loss_scale: None,
            skipped_steps: None,
            lr: None,
            clipped_steps: None,
            breakdown: None,
            steps: None,
            pace: None,
            micro_batch: 1,
            accumulation_steps: 1,
            action: None,
            detail: None,
            retained: None,
            elapsed_s: 0.0,
            metrics: BTreeMap::new(),
        }
    }

    /// A metric by its key (`val_accuracy`), if present and a number.
    pub fn metric(&self, key: &str) -> Option<f64> {
        self.metrics.get(key).copied().flatten()
    }
}

/// Appends snapshots to a file, one complete line per write, flushed to disk each time, so
/// earlier lines survive whatever happens to the run later.
#[derive(Debug)]
pub struct SnapshotWriter {
    file: File,
    path: PathBuf,
}

impl SnapshotWriter {
    /// Opens `path` for appending, creating it if needed.
    /// A last line without its end (a process killed while appending it) is cut off first,
    /// so that what is appended starts a line of its own.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        // Appended to, and cut, only inside its run.
        let dir = path.parent().unwrap_or(Path::new("."));
        super::names::inside(dir, path).map_err(std::io::Error::other)?;
        let file = File::options()
            .create(true)
            .read(true)
            .append(true)
            .open(path)?;
        let bytes = std::fs::read(path)?;
        if !bytes.is_empty() && !bytes.ends_with(b"\n") {
            let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            file.set_len(keep as u64)?;
        }
        Ok(Self {
            file,
            path: path.to_path_buf(),
        })
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one snapshot as one line.
    pub fn append(&mut self, snapshot: &Snapshot) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(snapshot).map_err(std::io::Error::other)?;
        line.push(b'\n');
        // One write of a whole line in append mode: a crash leaves earlier lines intact.
        self.file.write_all(&line)?;
        self.file.sync_data()
    }
}

/// Writes `contents` to `path` through a temporary file and a rename, so a reader (or a crash)
/// never sees half a file. The temporary file is this process's own (`config.<pid>.tmp`), so
/// processes that write the same file at once (the workers of a study, writing their sweep
/// directory's `plan.json`, on machines whose processes may share ids) each rename a whole
/// file of their own: made new under a name no other has (`config.<pid>.<nonce>.tmp`), so
/// that nothing is written through a file or a link already there, and no other writer's is
/// removed.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let (file, tmp) = loop {
        let clock = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let nonce = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = path.with_extension(format!("{}.{clock:x}{nonce}.tmp", std::process::id()));
        match File::options().write(true).create_new(true).open(&tmp) {
            Ok(file) => break (file, tmp),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    };
    let mut file = file;
    let written = file.write_all(contents);
    drop(file);
    match written.and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// The snapshots of the run as it stands. A `resume` after `k` epochs supersedes what was
/// written before it about later epochs (their `epoch` events and memory actions, trained again
/// after it) and the stopped part's `run_end`.
pub fn as_it_stands(snapshots: &[Snapshot]) -> Vec<&Snapshot> {
    let mut kept: Vec<&Snapshot> = Vec::with_capacity(snapshots.len());
    for s in snapshots {
        if s.event == Event::Resume {
            kept.retain(|e| e.epoch <= s.epoch && e.event != Event::RunEnd);
        }
        kept.push(s);
    }
    kept
}

/// The epoch snapshots of [`as_it_stands`].
pub fn current_epochs(snapshots: &[Snapshot]) -> Vec<&Snapshot> {
    as_it_stands(snapshots)
        .into_iter()
        .filter(|s| s.event == Event::Epoch)
        .collect()
}

mod read;
pub use read::{read_snapshot_log, read_snapshots, SnapshotLog};

#[cfg(test)]
mod tests;
