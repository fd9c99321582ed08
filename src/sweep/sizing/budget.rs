//! The memory budget of a parallel search in bytes: `sweep.budget` as given, or its default.
//!
//! - On flex, trials hold host memory: the default is [`DEFAULT_BUDGET_SHARE`] of what the
//!   machine has available when the search starts (Linux's `MemAvailable`), and a fraction is a
//!   share of the same.
//! - On a device with pools, the default is its capacity (as CubeCL reports it) less
//!   [`POOL_MARGIN`], and a fraction is a share of the capacity.

use burn::tensor::Device;

use crate::backend;
use crate::config::{ConfigError, RunConfig};
use crate::error::{Error, SweepError};
use crate::memory::{available_host_memory, device_total_memory, MemoryMeter, MemorySource};
use crate::sweep::space::{Budget, Packing, DEFAULT_BUDGET_SHARE};

/// The share of a device's capacity the default budget leaves out: room for what its pools do
/// not count (each child's own context on the device, the search's probes) and for anything
/// else on the device.
pub const POOL_MARGIN: f64 = 0.10;

/// The largest budget: a lease is written into a config as a byte count, a TOML integer.
const MOST: u64 = i64::MAX as u64;

/// The budget of `packing` for trials of `config`, in bytes: `sweep.budget` (by default a
/// share of the device's memory), and no more than the device's own budget where it has one,
/// which its trials' leases share with every other run on it ([`crate::lease`]).
pub(in crate::sweep) fn resolve(packing: &Packing, config: &RunConfig) -> Result<u64, Error> {
    let own = search_budget(packing, config)?;
    let device = crate::lease::device_budget(config)?;
    Ok(device.map_or(own, |(budget, _)| own.min(budget.bytes())))
}

/// `sweep.budget` for trials of `config`, in bytes.
fn search_budget(packing: &Packing, config: &RunConfig) -> Result<u64, Error> {
    if let Some(Budget::Bytes(bytes)) = packing.budget {
        return check(bytes);
    }
    let (device, source) = device_of(config)?;
    let memory = match source {
        MemorySource::Host => available_host_memory(),
        MemorySource::CubeclPool => device_total_memory(&device, source),
    };
    // A device that does not tell its memory is a state of the device, not of the file.
    let budget = of(packing.budget, source, memory).map_err(|e| {
        Error::Sweep(SweepError::Lease {
            message: format!("{e}{}{GIVE_SIZE}", why_unknown(config)),
        })
    })?;
    check(budget)
}

/// The device `config` trains on, and where its memory figures come from.
pub(in crate::sweep) fn device_of(config: &RunConfig) -> Result<(Device, MemorySource), Error> {
    let device = backend::select(&config.device)?;
    let source = MemoryMeter::new(&device).source();
    Ok((device, source))
}

/// The trial's own `memory.limit` in bytes (a fraction of its device's memory resolved), if
/// it sets one.
pub(in crate::sweep) fn own_limit(config: &RunConfig) -> Option<u64> {
    let limit = config.memory.limit?;
    let (device, source) = device_of(config).ok()?;
    limit.resolve(device_total_memory(&device, source))
}

/// Memory a default budget, or one given as a share, cannot be taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum MemoryUnknown {
    /// Linux's `MemAvailable`, on flex.
    #[error("the machine's available memory cannot be read (/proc/meminfo)")]
    Host,
    /// The device's capacity, on a backend with pools.
    #[error("the device does not report its memory")]
    Device,
}

/// The budget from the device's memory: available host memory on flex, capacity on pools.
fn of(
    budget: Option<Budget>,
    source: MemorySource,
    memory: Option<u64>,
) -> Result<u64, MemoryUnknown> {
    let memory = memory.ok_or(match source {
        MemorySource::Host => MemoryUnknown::Host,
        MemorySource::CubeclPool => MemoryUnknown::Device,
    })?;
    let share = match (budget, source) {
        (Some(Budget::Bytes(bytes)), _) => return Ok(bytes),
        (Some(Budget::Fraction(share)), _) => share,
        (None, MemorySource::Host) => DEFAULT_BUDGET_SHARE,
        (None, MemorySource::CubeclPool) => 1.0 - POOL_MARGIN,
    };
    Ok((memory as f64 * share) as u64)
}

/// Why a backend reports no capacity, where that is known.
fn why_unknown(config: &RunConfig) -> &'static str {
    match config.device.backend {
        crate::config::Backend::Wgpu => {
            " (CubeCL's wgpu runtime reads it only in Burn's `vulkan` build, not the WGSL one)"
        }
        _ => "",
    }
}

fn check(bytes: u64) -> Result<u64, Error> {
    match bytes <= MOST {
        true => Ok(bytes),
        false => Err(refused(format!(
            "must be at most {MOST} bytes, got {bytes}"
        ))),
    }
}

/// What a budget the device cannot size is told to be instead.
const GIVE_SIZE: &str = "; give it as a size, like \"8GiB\"";

fn refused(message: impl std::fmt::Display) -> Error {
    Error::Config(ConfigError {
        origin: "[sweep]".into(),
        key: Some("sweep.budget".into()),
        message: format!("sweep.budget: {message}{GIVE_SIZE}"),
    })
}
