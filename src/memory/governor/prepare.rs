//! A governor's set-up, before the run directory exists: the settings checked against the
//! device, the backend warmed up and the baseline taken.

use std::path::{Path, PathBuf};
use std::time::Instant;

use burn::tensor::Device;

use super::{Governor, Layout};
use crate::config::{ClearPolicy, ConfigError, MemoryConfig, MemoryPolicyKind, MemorySize};
use crate::error::Error;
use crate::memory::executor::{device_total_memory, Executor};
use crate::memory::host::{reset_peak_resident_set, resident_set_bytes};
use crate::memory::observer::Observer;
use crate::memory::policy::Policies;
use crate::memory::probe::MemoryProbe;
use crate::memory::snapshots::SnapshotWriter;
use crate::memory::usage::{format_bytes, MemorySource, MemoryUsage};

/// A governor before its run directory exists: settings checked, the backend warmed up and the
/// baseline taken.
pub struct Prepared {
    pub(super) probe: MemoryProbe,
    pub(super) policies: Policies,
    pub(super) executor: Executor,
    pub(super) clear: ClearPolicy,
    pub(super) limit_bytes: Option<u64>,
    pub(super) baseline: MemoryUsage,
    pub(super) device_init_bytes: i64,
    pub(super) rss_before: u64,
    pub(super) started: Instant,
}

impl Prepared {
    /// Checks `config` against `device`, warms the backend up and takes the baseline.
    pub(super) fn new(config: &MemoryConfig, device: &Device) -> Result<Self, Error> {
        let started = Instant::now();
        let mut probe = MemoryProbe::new(device);
        let source = probe.source();
        let total = device_total_memory(device, source);
        let policies = Policies::from_config(config, total).map_err(|m| memory_config_error(&m))?;
        if config.policy == MemoryPolicyKind::Preallocate && source == MemorySource::Host {
            check_host_reservation(config)?;
        }
        // The baseline: the backend's one-time state exists (warm-up), nothing of the run does.
        let mut executor = Executor::new(device, source);
        let before_warm_up = probe.read().map_err(Error::device)?;
        executor
            .warm_up(config.clear != ClearPolicy::Never)
            .map_err(Error::device)?;
        let baseline = probe.read().map_err(Error::device)?;
        let rss_before = resident_set_bytes().unwrap_or(0);
        reset_peak_resident_set();
        Ok(Self {
            probe,
            policies,
            executor,
            clear: config.clear,
            limit_bytes: config.limit.and_then(|size| size.resolve(total)),
            baseline,
            device_init_bytes: baseline.bytes_in_use as i64 - before_warm_up.bytes_in_use as i64,
            rss_before,
            started,
        })
    }

    /// Where memory figures come from.
    pub fn source(&self) -> MemorySource {
        self.probe.source()
    }

    /// For a run that continues one that had been going `elapsed_s` seconds: snapshot times
    /// go on from there.
    pub fn continuing(mut self, elapsed_s: f64) -> Self {
        let earlier = std::time::Duration::from_secs_f64(elapsed_s.max(0.0));
        self.started = self.started.checked_sub(earlier).unwrap_or(self.started);
        self
    }

    /// Opens `<run_dir>/snapshots.jsonl` and starts governing.
    pub fn open(
        self,
        run_dir: &Path,
        layout: Layout,
        observer: Box<dyn Observer>,
    ) -> Result<Governor, Error> {
        let path: PathBuf = run_dir.join("snapshots.jsonl");
        let writer = SnapshotWriter::open(&path).map_err(|e| Error::io(&path, e))?;
        drop(path);
        // The baseline again, now that the run's own records (its directory, this writer, the
        // caller's) exist: what a run keeps is then what training left, not its bookkeeping.
        let mut setup = self;
        setup.baseline = setup.probe.read().map_err(Error::device)?;
        Ok(Governor {
            setup,
            writer,
            observer,
            layout,
            previous_attempt: None,
            step: 0,
            resting_estimate: 0,
            growth: Default::default(),
            peak_bytes_in_use: 0,
            peak_bytes_reserved: 0,
            memory_actions: 0,
            retained: None,
            footprint: None,
            step_peaks: Default::default(),
            run_peaks: Default::default(),
            step_peak: 0,
            trace: Default::default(),
        })
    }
}

/// On the host a reservation is taken from the machine's RAM, which other processes share: it
/// must be a size in bytes, and fit in what is available.
fn check_host_reservation(config: &MemoryConfig) -> Result<(), Error> {
    match config.preallocate {
        Some(MemorySize::Bytes(bytes)) => match crate::memory::host::available_host_memory() {
            Some(available) if bytes > available => Err(memory_config_error(&format!(
                "memory.preallocate = \"{}\" is more than the {} of RAM available on this machine",
                format_bytes(bytes),
                format_bytes(available)
            ))),
            _ => Ok(()),
        },
        Some(MemorySize::Fraction(share)) => Err(memory_config_error(&format!(
            "memory.preallocate = {share} is a fraction of device memory, and flex has none of \
             its own: it would take that share of the machine's RAM from every other \
             process; give a size such as \"256MiB\" (policy = \"preallocate\" without a size \
             means 0.75)"
        ))),
        None => Ok(()),
    }
}

fn memory_config_error(message: &str) -> Error {
    Error::Config(ConfigError {
        origin: "[memory]".into(),
        key: None,
        message: message.to_string(),
    })
}
