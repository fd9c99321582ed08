//! A guard's set-up, before the run directory exists: the memory layer's [`Control`] set up
//! (settings checked against the device, the backend warmed up, the baseline taken), and the
//! clock the snapshots' times count from.

use std::path::Path;
use std::time::Instant;

use burn::tensor::Device;

use super::MemoryGuard;
use crate::config::MemoryConfig;
use crate::error::Error;
use crate::memory::Layout;
use crate::memory::{Control, MemorySource};
use crate::record::Observer;
use crate::train::recorder::RunRecorder;

/// A guard before its run directory exists.
pub struct Prepared {
    pub(super) control: Control,
    pub(super) started: Instant,
    /// Whether the run writes TensorBoard's event file.
    pub(super) tensorboard: bool,
}

impl Prepared {
    /// Checks `config` against `device`, warms the backend up and takes the baseline.
    pub(super) fn new(config: &MemoryConfig, device: &Device) -> Result<Self, Error> {
        let started = Instant::now();
        let control = Control::new(config, device)?;
        Ok(Self {
            control,
            started,
            tensorboard: false,
        })
    }

    /// Where memory figures come from.
    pub fn source(&self) -> MemorySource {
        self.control.source()
    }

    /// Whether the run writes TensorBoard's event file (`run.tensorboard`).
    pub fn tensorboard(mut self, on: bool) -> Self {
        self.tensorboard = on;
        self
    }

    /// For a run that continues one that had been going `elapsed_s` seconds: snapshot times
    /// go on from there.
    pub fn continuing(mut self, elapsed_s: f64) -> Self {
        let earlier = std::time::Duration::from_secs_f64(elapsed_s.max(0.0));
        self.started = self.started.checked_sub(earlier).unwrap_or(self.started);
        self
    }

    /// Opens `<run_dir>/snapshots.jsonl`: the run's guard, with the recorder it records
    /// through.
    pub fn open(
        self,
        run_dir: &Path,
        layout: Layout,
        observer: Box<dyn Observer>,
    ) -> Result<MemoryGuard, Error> {
        let Prepared {
            mut control,
            started,
            tensorboard,
        } = self;
        let recorder = RunRecorder::open(run_dir, started, observer, tensorboard)?;
        // The baseline again, now that the run's own records (its directory, the snapshots'
        // writer, the caller's) exist: what a run keeps is then what training left, not its
        // bookkeeping.
        control.rebaseline()?;
        // The run's figures start here: the peak of its set-up (the model, the loaders) is
        // the run's own, not what the process did before it (an earlier run, a warm-up).
        control.meter().reset_peak();
        Ok(MemoryGuard {
            control,
            layout,
            previous_attempt: None,
            resting_estimate: 0,
            footprint: None,
            in_update: false,
            rec: recorder,
        })
    }
}
