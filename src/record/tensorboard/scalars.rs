//! Which scalars a run writes to TensorBoard, and under which tags: at each epoch's snapshot,
//! the training loss, `val_loss` and the validation metrics (`val_accuracy`, ...), the learning
//! rate and the memory figures (in use, peak and reserved, in MiB); at each step the run logs
//! (about once a second, and every `run.log_every_steps` steps where it is set), the step's
//! loss, rate and memory in use under `step/`. Every scalar is at the run's global optimizer
//! step, so that the two line up.

use super::EventFile;
use crate::record::{EpochProgress, Snapshot};

/// Bytes in a MiB.
const MIB: f64 = 1024.0 * 1024.0;

fn mib(bytes: u64) -> Option<f64> {
    Some(bytes as f64 / MIB)
}

impl EventFile {
    /// Writes an epoch's snapshot's scalars.
    pub fn epoch(&mut self, s: &Snapshot) -> std::io::Result<()> {
        let mut values = vec![
            ("loss", s.loss),
            ("val_loss", s.val_loss),
            ("lr", s.lr),
            ("memory/in_use_mib", mib(s.memory.bytes_in_use)),
            ("memory/peak_mib", mib(s.memory.peak_bytes_in_use)),
            ("memory/reserved_mib", mib(s.memory.bytes_reserved)),
        ];
        values.extend(s.metrics.iter().map(|(k, v)| (k.as_str(), *v)));
        self.scalars(s.step, &values)?;
        self.flush()
    }

    /// Writes a step's scalars, at global step `step`.
    pub fn step(&mut self, step: usize, p: &EpochProgress) -> std::io::Result<()> {
        let values = [
            ("step/loss", Some(p.loss)),
            ("step/lr", p.lr),
            ("step/memory_in_use_mib", p.bytes_in_use.and_then(mib)),
        ];
        self.scalars(step, &values)
    }
}
