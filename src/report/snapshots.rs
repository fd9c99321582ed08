//! `snapshots.jsonl`: one JSON object per line, appended as the run goes.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::memory::MemoryUsage;

/// What a snapshot marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    /// After the model and data are ready, before the first step.
    RunStart,
    /// After an epoch's training and validation.
    Epoch,
    /// After the last epoch, once the run's tensors are dropped.
    RunEnd,
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
    /// Validation accuracy in `[0, 1]`.
    pub val_accuracy: Option<f64>,
    /// Training samples per second over the epoch.
    pub samples_per_sec: Option<f64>,
    /// Memory figures. `peak_bytes_in_use` is the high-water mark of this epoch (of setup, at
    /// run start; of the whole run, at run end).
    #[serde(flatten)]
    pub memory: MemoryUsage,
    /// Seconds since the run started.
    pub elapsed_s: f64,
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
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = File::options().create(true).append(true).open(path)?;
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

/// Reads every snapshot in a `snapshots.jsonl` file.
pub fn read_snapshots(path: &Path) -> std::io::Result<Vec<Snapshot>> {
    let reader = BufReader::new(File::open(path)?);
    let mut out = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let snapshot = serde_json::from_str(&line).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}:{}: {e}", path.display(), i + 1),
            )
        })?;
        out.push(snapshot);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemorySource;

    fn snapshot(epoch: usize) -> Snapshot {
        Snapshot {
            event: Event::Epoch,
            epoch,
            step: epoch * 10,
            loss: Some(0.5),
            val_loss: None,
            val_accuracy: Some(0.9),
            samples_per_sec: Some(1000.0),
            memory: MemoryUsage {
                bytes_in_use: 10,
                bytes_reserved: 20,
                peak_bytes_in_use: 15,
                bytes_padding: 0,
                source: MemorySource::Host,
            },
            elapsed_s: 1.5,
        }
    }

    #[test]
    fn lines_have_the_documented_flat_fields() {
        let value = serde_json::to_value(snapshot(1)).unwrap();
        let keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        for key in [
            "event",
            "epoch",
            "step",
            "loss",
            "val_loss",
            "val_accuracy",
            "samples_per_sec",
            "bytes_in_use",
            "bytes_reserved",
            "peak_bytes_in_use",
            "bytes_padding",
            "source",
            "elapsed_s",
        ] {
            assert!(keys.contains(&key), "missing {key} in {keys:?}");
        }
        assert_eq!(value["event"], "epoch");
        assert_eq!(value["source"], "host");
        assert!(value["val_loss"].is_null());
    }

    #[test]
    fn appending_keeps_earlier_lines_across_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("snapshots.jsonl");
        SnapshotWriter::open(&path)
            .unwrap()
            .append(&snapshot(1))
            .unwrap();
        let mut writer = SnapshotWriter::open(&path).unwrap();
        writer.append(&snapshot(2)).unwrap();
        let read = read_snapshots(&path).unwrap();
        assert_eq!(read, vec![snapshot(1), snapshot(2)]);
    }
}
