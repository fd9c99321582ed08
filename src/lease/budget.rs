//! A device's budget: where it is set (the config's `memory.device_budget`, [`BUDGET_VAR`], or
//! the registry's `budget` file that `tidemark leases --budget` writes), read without making
//! anything (the `budget` file read and written here); and, for a budget set as `"device"`,
//! what the device has free.

use super::{device_name, DeviceDir, Registry};
use crate::config::{Backend, DeviceBudget, MemorySize, RunConfig, ValueError};
use crate::error::{Error, LeaseError};
use crate::memory::{available_host_memory, device_total_memory, MemoryMeter};

/// The variable that sets a device's budget: `host=16GiB,cuda-0=60GiB`, or a bare size for
/// every device; `device` in place of a size reads it from the device.
pub const BUDGET_VAR: &str = "TIDEMARK_DEVICE_BUDGET";

/// A device's budget for a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// These bytes.
    Bytes(u64),
    /// Set as `"device"`: the budget the device's runs were admitted under where any holds or
    /// waits for a lease, else `free`, what the device had free when this run read it (on
    /// CUDA the driver's free memory, every process's use left out, this one's context
    /// included; on flex and CubeCL's CPU runtime the machine's `MemAvailable`).
    Device {
        /// Free when read.
        free: u64,
    },
}

impl Budget {
    /// Its bytes as this run reads them, before the registry's runs are seen.
    pub fn bytes(self) -> u64 {
        match self {
            Budget::Bytes(bytes) | Budget::Device { free: bytes } => bytes,
        }
    }
}

/// The budget of `config`'s device, if it has one, and where it was set: the config's
/// `memory.device_budget`, [`BUDGET_VAR`], or the registry's `budget` file (read where the
/// registry exists: a look makes nothing).
pub fn device_budget(config: &RunConfig) -> Result<Option<(Budget, String)>, Error> {
    let name = device_name(config);
    let (set, origin): (DeviceBudget, String) = match budget_set(config, &name)? {
        Some(set) => set,
        None => {
            let Some(registry) = Registry::find()? else {
                return Ok(None);
            };
            let Some(dir) = registry.existing(&name)? else {
                return Ok(None);
            };
            let path = dir.path().join("budget");
            match dir.budget_file()? {
                Some(set) => (set, path.display().to_string()),
                None => return Ok(None),
            }
        }
    };
    let budget = match set {
        DeviceBudget::Device => Budget::Device {
            free: free_memory(config, &name, &origin)?,
        },
        DeviceBudget::Size(size) => {
            let device = crate::backend::select(&config.device)?;
            let total = device_total_memory(&device, MemoryMeter::new(&device).source());
            Budget::Bytes(size.resolve(total).ok_or_else(|| {
                Error::Lease(LeaseError::Budget {
                    origin: origin.clone(),
                    message: format!(
                        "a share of the device's memory, which {name} does not tell; give a size"
                    ),
                })
            })?)
        }
    };
    Ok(Some((budget, origin)))
}

/// The budget the config or the environment sets for device `name`, and where.
fn budget_set(config: &RunConfig, name: &str) -> Result<Option<(DeviceBudget, String)>, Error> {
    if let Some(set) = config.memory.device_budget {
        return Ok(Some((set, "memory.device_budget".into())));
    }
    let Some(text) = std::env::var(BUDGET_VAR)
        .ok()
        .filter(|t| !t.trim().is_empty())
    else {
        return Ok(None);
    };
    budget_of(&text, name)
        .map(|b| b.map(|set| (set, BUDGET_VAR.to_string())))
        .map_err(|ValueError(message)| {
            Error::Lease(LeaseError::Budget {
                origin: format!("{BUDGET_VAR}={text}"),
                message,
            })
        })
}

/// What device `name` has free for tidemark's runs now, for a budget set as `"device"` at
/// `origin`.
fn free_memory(config: &RunConfig, name: &str, origin: &str) -> Result<u64, Error> {
    let free = match config.device.backend {
        Backend::Flex | Backend::Cpu => available_host_memory(),
        Backend::Cuda => cuda_free(config.device.index),
        Backend::Wgpu => None,
    };
    free.filter(|&f| f > 0).ok_or_else(|| {
        Error::Lease(LeaseError::Budget {
            origin: origin.to_string(),
            message: format!(
                "\"device\": {name} does not report its free memory; give its budget as a size"
            ),
        })
    })
}

/// CUDA device `index`'s free memory, as its driver reports it (`cuMemGetInfo`).
#[cfg(feature = "cuda")]
fn cuda_free(index: usize) -> Option<u64> {
    let context = cudarc::driver::CudaContext::new(index).ok()?;
    let (free, _total) = context.mem_get_info().ok()?;
    Some(free as u64)
}

#[cfg(not(feature = "cuda"))]
fn cuda_free(_index: usize) -> Option<u64> {
    None
}

/// Parses a budget as written in [`BUDGET_VAR`], the `budget` file or `--budget`: a size, or
/// `device`.
pub(crate) fn parse_budget(text: &str) -> Result<DeviceBudget, ValueError> {
    let text = text.trim();
    // A bare decimal is a share where a config takes one; a device's budget is not one.
    if text.contains('.') && text.parse::<f64>().is_ok() {
        return Err(ValueError(format!(
            "must be a size with a unit (\"16GiB\") or \"{}\" (what the device has free), got \
             \"{text}\": a device's budget is not a share of it",
            DeviceBudget::DEVICE
        )));
    }
    match text.eq_ignore_ascii_case(DeviceBudget::DEVICE) {
        true => Ok(DeviceBudget::Device),
        false => crate::config::parse_bytes(text)
            .map(|b| DeviceBudget::Size(MemorySize::Bytes(b)))
            .map_err(|e| {
                ValueError(format!(
                    "{} (or \"{}\": what the device has free)",
                    e.0,
                    DeviceBudget::DEVICE
                ))
            }),
    }
}

impl DeviceDir {
    /// The budget its `budget` file sets, if it has one: bytes, or `device`.
    pub fn budget_file(&self) -> Result<Option<DeviceBudget>, LeaseError> {
        let path = self.path().join("budget");
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(LeaseError::registry(&path, format!("cannot be read: {e}"))),
        };
        parse_budget(text.trim())
            .map(Some)
            .map_err(|e| LeaseError::registry(&path, format!("is not a budget: {}", e.0)))
    }

    /// Writes its `budget` file: bytes, or `device`.
    pub fn set_budget(&self, budget: DeviceBudget) -> Result<(), LeaseError> {
        let path = self.path().join("budget");
        let text = match budget {
            DeviceBudget::Size(MemorySize::Bytes(bytes)) => bytes.to_string(),
            DeviceBudget::Size(MemorySize::Fraction(_)) => {
                let message = "is written as bytes or \"device\", not a share of the device";
                return Err(LeaseError::registry(&path, message));
            }
            DeviceBudget::Device => DeviceBudget::DEVICE.to_string(),
        };
        crate::record::write_atomic(&path, format!("{text}\n").as_bytes())
            .map_err(|e| LeaseError::registry(&path, format!("cannot be written: {e}")))
    }
}

/// Device `name`'s budget in [`BUDGET_VAR`]'s `text`: its own entry, else a bare size.
fn budget_of(text: &str, name: &str) -> Result<Option<DeviceBudget>, ValueError> {
    let mut bare = None;
    let mut own = None;
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (device, size) = match entry.split_once('=') {
            Some((device, size)) => (Some(device.trim().replace(':', "-")), size.trim()),
            None => (None, entry),
        };
        let set = parse_budget(size).map_err(|e| {
            ValueError(format!(
                "{}: {}",
                device.as_deref().unwrap_or("the budget"),
                e.0
            ))
        })?;
        match device {
            Some(device) if device == name => own = Some(set),
            Some(_) => {}
            None => bare = Some(set),
        }
    }
    Ok(own.or(bare))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_variable_gives_each_device_its_own_or_the_bare_size() {
        let bytes = |b: u64| Ok(Some(DeviceBudget::Size(MemorySize::Bytes(b))));
        let text = "host=1GiB, cuda:0=60GiB";
        assert_eq!(budget_of(text, "host"), bytes(1 << 30));
        assert_eq!(budget_of(text, "cuda-0"), bytes(60 << 30));
        assert_eq!(budget_of(text, "wgpu-0"), Ok(None));
        assert_eq!(budget_of("512MiB,host=1GiB", "wgpu-0"), bytes(512 << 20));
        assert_eq!(budget_of("512MiB,host=1GiB", "host"), bytes(1 << 30));
        assert_eq!(
            budget_of("host=device,cuda-0=Device", "cuda-0"),
            Ok(Some(DeviceBudget::Device))
        );
        let bad = budget_of("host=lots", "host").unwrap_err().0;
        assert!(bad.starts_with("host: must be a size"), "{bad}");
        assert!(
            bad.ends_with("(or \"device\": what the device has free)"),
            "{bad}"
        );
        // A share is a config's; a device's budget is a size or "device", and says so.
        let share = budget_of("host=0.5", "host").unwrap_err().0;
        assert_eq!(
            share,
            "host: must be a size with a unit (\"16GiB\") or \"device\" (what the device has \
             free), got \"0.5\": a device's budget is not a share of it"
        );
    }

    #[test]
    fn a_device_that_does_not_report_its_free_memory_is_refused_a_budget_read_from_it() {
        let text =
            "[model]\nhidden = [8]\n[data]\nkind = \"synthetic\"\n[device]\nbackend = \"wgpu\"\n";
        let config = crate::config::parse(text, "wgpu.toml", &[]).unwrap();
        let e = free_memory(&config, "wgpu-0", BUDGET_VAR).unwrap_err();
        assert_eq!(
            e.to_string(),
            "TIDEMARK_DEVICE_BUDGET: \"device\": wgpu-0 does not report its free memory; give \
             its budget as a size"
        );
        assert_eq!(e.exit_code(), 2);
        // On flex, the machine's available memory.
        let flex = crate::config::parse(&text.replace("wgpu", "flex"), "flex.toml", &[]).unwrap();
        let free = free_memory(&flex, "host", BUDGET_VAR).unwrap();
        assert!(free > 0);
    }
}
