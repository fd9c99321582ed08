//! A device's budget: where it is set (the config's `memory.device_budget`, [`BUDGET_VAR`], or
//! the registry's `budget` file that `tidemark leases --budget` writes), read without making
//! anything.

use super::{device_name, Registry};
use crate::config::{RunConfig, ValueError};
use crate::error::{Error, LeaseError};
use crate::memory::{device_total_memory, MemoryMeter};

/// The variable that sets a device's budget: `host=16GiB,cuda-0=60GiB`, or a bare size for
/// every device.
pub const BUDGET_VAR: &str = "TIDEMARK_DEVICE_BUDGET";

/// The budget of `config`'s device, if it has one, and where it was set: the config's
/// `memory.device_budget`, [`BUDGET_VAR`], or the registry's `budget` file (read where the
/// registry exists: a look makes nothing).
pub fn device_budget(config: &RunConfig) -> Result<Option<(u64, String)>, Error> {
    let name = device_name(config);
    if let Some(set) = budget_set(config, &name)? {
        return Ok(Some(set));
    }
    let Some(registry) = Registry::find()? else {
        return Ok(None);
    };
    let Some(dir) = registry.existing(&name)? else {
        return Ok(None);
    };
    let path = dir.path().join("budget");
    Ok(dir.budget_file()?.map(|b| (b, path.display().to_string())))
}

/// The budget the config or the environment sets for device `name`, and where.
fn budget_set(config: &RunConfig, name: &str) -> Result<Option<(u64, String)>, Error> {
    if let Some(size) = config.memory.device_budget {
        let device = crate::backend::select(&config.device)?;
        let total = device_total_memory(&device, MemoryMeter::new(&device).source());
        let bytes = size.resolve(total).ok_or_else(|| {
            Error::Lease(LeaseError::Budget {
                origin: "memory.device_budget".into(),
                message: format!(
                    "a share of the device's memory, which {name} does not tell; give a size"
                ),
            })
        })?;
        return Ok(Some((bytes, "memory.device_budget".into())));
    }
    let Some(text) = std::env::var(BUDGET_VAR)
        .ok()
        .filter(|t| !t.trim().is_empty())
    else {
        return Ok(None);
    };
    budget_of(&text, name)
        .map(|b| b.map(|bytes| (bytes, BUDGET_VAR.to_string())))
        .map_err(|ValueError(message)| {
            Error::Lease(LeaseError::Budget {
                origin: format!("{BUDGET_VAR}={text}"),
                message,
            })
        })
}

/// Device `name`'s budget in [`BUDGET_VAR`]'s `text`: its own entry, else a bare size.
fn budget_of(text: &str, name: &str) -> Result<Option<u64>, ValueError> {
    let mut bare = None;
    let mut own = None;
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (device, size) = match entry.split_once('=') {
            Some((device, size)) => (Some(device.trim().replace(':', "-")), size.trim()),
            None => (None, entry),
        };
        let bytes = crate::config::parse_bytes(size).map_err(|e| {
            ValueError(format!(
                "{}: {}",
                device.as_deref().unwrap_or("the budget"),
                e.0
            ))
        })?;
        match device {
            Some(device) if device == name => own = Some(bytes),
            Some(_) => {}
            None => bare = Some(bytes),
        }
    }
    Ok(own.or(bare))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_variable_gives_each_device_its_own_or_the_bare_size() {
        let text = "host=1GiB, cuda:0=60GiB";
        assert_eq!(budget_of(text, "host"), Ok(Some(1 << 30)));
        assert_eq!(budget_of(text, "cuda-0"), Ok(Some(60 << 30)));
        assert_eq!(budget_of(text, "wgpu-0"), Ok(None));
        assert_eq!(budget_of("512MiB,host=1GiB", "wgpu-0"), Ok(Some(512 << 20)));
        assert_eq!(budget_of("512MiB,host=1GiB", "host"), Ok(Some(1 << 30)));
        let bad = budget_of("host=lots", "host").unwrap_err().0;
        assert!(bad.starts_with("host: must be a size"), "{bad}");
    }
}
