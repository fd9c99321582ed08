//! [`Control`]: the meter, the policies and the executor for one device, set up from
//! `[memory]`, with the baseline that clearing is verified against. What a run does with
//! them is the training loop's: the layout and the limit's steps in its
//! [`MemoryGuard`](crate::train::MemoryGuard), the snapshots and statistics in its
//! [`RunRecorder`](crate::train::RunRecorder).

use burn::tensor::Device;

use super::error::MemoryError;
use super::executor::{device_total_memory, Applied, Executor};
use super::meter::MemoryMeter;
use super::policy::{MemoryAction, Phase, Policies, RunState};
use super::proc_status::{available_host_memory, reset_peak_resident_set, resident_set_bytes};
use super::usage::{format_bytes, MemorySource, MemoryUsage};
use crate::config::{ClearPolicy, MemoryConfig, MemoryPolicyKind, MemorySize};

/// The memory layer of one device: it reads figures, decides, and applies.
pub struct Control {
    meter: MemoryMeter,
    policies: Policies,
    executor: Executor,
    clear: ClearPolicy,
    limit_bytes: Option<u64>,
    baseline: MemoryUsage,
    device_init_bytes: i64,
    rss_before: u64,
}

impl Control {
    /// Checks `config` against `device`, warms the backend up and takes the baseline: the
    /// backend's one-time state exists, nothing of a run does.
    pub fn new(config: &MemoryConfig, device: &Device) -> Result<Self, MemoryError> {
        let mut meter = MemoryMeter::new(device);
        let source = meter.source();
        let total = device_total_memory(device, source);
        let policies =
            Policies::from_config(config, total).map_err(|e| MemoryError::Settings(e.0))?;
        if config.policy == MemoryPolicyKind::Preallocate && source == MemorySource::Host {
            check_host_reservation(config)?;
        }
        let mut executor = Executor::new(device, source);
        let before_warm_up = meter.read()?;
        executor.warm_up(config.clear != ClearPolicy::Never)?;
        let baseline = meter.read()?;
        let rss_before = resident_set_bytes().unwrap_or(0);
        reset_peak_resident_set();
        Ok(Self {
            meter,
            policies,
            executor,
            clear: config.clear,
            limit_bytes: config.limit.and_then(|size| size.resolve(total)),
            baseline,
            device_init_bytes: baseline.bytes_in_use as i64 - before_warm_up.bytes_in_use as i64,
            rss_before,
        })
    }

    /// Takes the baseline again: once a run's own records exist, so that what the run keeps
    /// is what training left, not its bookkeeping.
    pub fn rebaseline(&mut self) -> Result<(), MemoryError> {
        self.baseline = self.meter.read()?;
        Ok(())
    }

    /// Where memory figures come from.
    pub fn source(&self) -> MemorySource {
        self.meter.source()
    }

    /// The limit in bytes, if one is set.
    pub fn limit_bytes(&self) -> Option<u64> {
        self.limit_bytes
    }

    /// Enforces a limit of `bytes` where none is set (a run's memory lease), as
    /// `memory.limit` with `on_limit = "fail"` is; a limit already set is kept.
    pub fn limit_to(&mut self, bytes: u64) {
        if self.limit_bytes.is_none() {
            self.limit_bytes = Some(bytes);
            self.policies.add_limit(bytes, crate::config::OnLimit::Fail);
        }
    }

    /// What was in use and reserved before the run.
    pub fn baseline(&self) -> MemoryUsage {
        self.baseline
    }

    /// Bytes the backend's warm-up kept (one-time state; about 0 after a process's first run).
    pub fn device_init_bytes(&self) -> i64 {
        self.device_init_bytes
    }

    /// The process's resident set when the baseline was taken.
    pub fn rss_before(&self) -> u64 {
        self.rss_before
    }

    /// `memory.clear`.
    pub fn clear(&self) -> ClearPolicy {
        self.clear
    }

    /// The meter, for figures and windows.
    pub fn meter(&mut self) -> &mut MemoryMeter {
        &mut self.meter
    }

    /// The figures now, after waiting for the device.
    pub fn read(&mut self) -> Result<MemoryUsage, MemoryError> {
        Ok(self.meter.read()?)
    }

    /// Gives back what is free and reads the figures again: after probes that allocate at
    /// sizes the run will not use.
    pub fn release(&mut self) -> Result<MemoryUsage, MemoryError> {
        self.cleanup()?;
        self.read()
    }

    /// Opens a new window (a step, validation, a probe) at the current figure.
    pub fn begin_window(&mut self) {
        self.meter.begin_window();
    }

    /// The figures of the window opened last, without waiting for the device.
    pub fn window(&mut self) -> MemoryUsage {
        self.meter.observe()
    }

    /// What the policies decide at `phase` on `usage`.
    pub fn decide(&self, phase: Phase, usage: &MemoryUsage, state: &RunState) -> Vec<MemoryAction> {
        self.policies.decide(phase, usage, state)
    }

    /// Applies a reservation or a cleanup to the device; `None` when nothing was done.
    pub fn execute(&mut self, action: &MemoryAction) -> Result<Option<Applied>, MemoryError> {
        Ok(self.executor.apply(action)?)
    }

    /// Lets the backend finish with what a run's graphs left behind, before what stayed is
    /// measured.
    pub fn settle(&mut self) -> Result<(), MemoryError> {
        Ok(self.executor.settle()?)
    }

    /// Gives back what is free: the device pools' free pages, the host heap's.
    pub fn cleanup(&mut self) -> Result<(), MemoryError> {
        Ok(self.executor.cleanup()?)
    }
}

/// On the host a reservation is taken from the machine's RAM, which other processes share: it
/// must be a size in bytes, and fit in what is available.
fn check_host_reservation(config: &MemoryConfig) -> Result<(), MemoryError> {
    match config.preallocate {
        Some(MemorySize::Bytes(bytes)) => match available_host_memory() {
            Some(available) if bytes > available => Err(MemoryError::Settings(format!(
                "memory.preallocate = \"{}\" is more than the {} of RAM available on this machine",
                format_bytes(bytes),
                format_bytes(available)
            ))),
            _ => Ok(()),
        },
        Some(MemorySize::Fraction(share)) => Err(MemoryError::Settings(format!(
            "memory.preallocate = {share} is a fraction of device memory, and flex has none of \
             its own: it would take that share of the machine's RAM from every other \
             process; give a size such as \"256MiB\" (policy = \"preallocate\" without a size \
             means 0.75)"
        ))),
        None => Ok(()),
    }
}
