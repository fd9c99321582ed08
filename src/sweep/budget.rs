//! The memory budget of a parallel search in bytes: `sweep.budget` as given, or its default.
//!
//! On flex, trials hold host memory, and the default is [`DEFAULT_BUDGET_SHARE`] of what the
//! machine has available when the search starts (Linux's `MemAvailable`); a fraction is a
//! share of the same. Burn 0.22 does not report a device's capacity, so on a backend with
//! device pools the budget must be given as a size.

use super::space::{Budget, Packing, DEFAULT_BUDGET_SHARE};
use crate::config::{Backend, ConfigError, RunConfig};
use crate::error::Error;

/// The budget of `packing` for trials of `config`, in bytes.
pub(super) fn resolve(packing: &Packing, config: &RunConfig) -> Result<u64, Error> {
    let share = match packing.budget {
        Some(Budget::Bytes(bytes)) => return Ok(bytes),
        Some(Budget::Fraction(share)) => share,
        None => DEFAULT_BUDGET_SHARE,
    };
    if config.device.backend != Backend::Flex {
        return Err(refused(format!(
            "{} does not report its device's memory in Burn 0.22, so a parallel search on it \
             needs sweep.budget as a size, like \"8GiB\" (what its trials may hold together)",
            config.device.backend
        )));
    }
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| mem_available(&text))
        .ok_or_else(|| {
            refused(
                "the machine's available memory cannot be read (/proc/meminfo), so sweep.budget \
                 must be given as a size, like \"8GiB\""
                    .into(),
            )
        })?;
    Ok((available as f64 * share) as u64)
}

fn refused(message: String) -> Error {
    Error::Config(ConfigError {
        origin: "[sweep]".into(),
        key: Some("sweep.budget".into()),
        message: format!("sweep.budget: {message}"),
    })
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn available_memory_is_read_from_meminfo() {
        let text = "MemTotal:       24000000 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(mem_available(text), Some(20_000_000 * 1024));
        assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn a_size_is_taken_as_it_is_and_a_share_of_what_is_available() {
        let config = crate::config::ConfigBuilder::new("b").build().unwrap();
        let sized = Packing {
            parallel: 2,
            budget: Some(Budget::Bytes(123)),
            ..Packing::default()
        };
        assert_eq!(resolve(&sized, &config).unwrap(), 123);
        let half = resolve(&Packing::default(), &config).unwrap();
        let quarter = Packing {
            budget: Some(Budget::Fraction(0.25)),
            ..Packing::default()
        };
        let quarter = resolve(&quarter, &config).unwrap();
        assert!(
            half > 0 && quarter.abs_diff(half / 2) < half / 10,
            "{half} {quarter}"
        );
    }
}
