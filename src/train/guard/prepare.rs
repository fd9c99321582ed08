//! A guard's set-up, before the run directory exists: the memory layer's [`Control`] set up
//! (settings checked against the device, the backend warmed up, the baseline taken), and the
//! clock the snapshots' times count from, which the run's [`RunRecorder`] takes
//! ([`Prepared::started`]). The recorder is opened beside the guard, not by it.

use std::time::Instant;

use burn::tensor::Device;

use super::{MemoryGuard, Standing};
use crate::config::MemoryConfig;
use crate::error::Error;
use crate::memory::Layout;
use crate::memory::{Control, MemorySource};

/// A guard before its run directory exists.
pub struct Prepared {
    pub(super) control: Control,
    pub(super) started: Instant,
}

impl Prepared {
    /// Checks `config` against `device`, warms the backend up and takes the baseline.
    pub(super) fn new(config: &MemoryConfig, device: &Device) -> Result<Self, Error> {
        let started = Instant::now();
        let control = Control::new(config, device)?;
        Ok(Self { control, started })
    }

    /// Where memory figures come from.
    pub fn source(&self) -> MemorySource {
        self.control.source()
    }

    /// When the run began: the run's recorder counts its snapshots' times from here
    /// ([`RunRecorder::open`](crate::train::RunRecorder::open)).
    pub fn started(&self) -> Instant {
        self.started
    }

    /// For a run that continues one that had been going `elapsed_s` seconds: snapshot times
    /// go on from there.
    pub fn continuing(mut self, elapsed_s: f64) -> Self {
        let earlier = std::time::Duration::from_secs_f64(elapsed_s.max(0.0));
        self.started = self.started.checked_sub(earlier).unwrap_or(self.started);
        self
    }

    /// The run's guard, at `layout`, once the run's directory and its recorder are open: the
    /// phases record through that recorder, which each takes.
    pub fn open(self, layout: Layout) -> Result<MemoryGuard, Error> {
        let Prepared { mut control, .. } = self;
        // The baseline again, now that the run's own records (its directory, the snapshots'
        // writer, the caller's) exist: what a run keeps is then what training left, not its
        // bookkeeping.
        control.rebaseline()?;
        // The run's figures start here: the peak of its set-up (the model, the loaders) is
        // the run's own, not what the process did before it (an earlier run, a warm-up).
        control.meter().reset_peak();
        Ok(MemoryGuard {
            control,
            standing: Standing::new(layout),
        })
    }
}
