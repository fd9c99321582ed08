//! `[sweep] parallel` and `[sweep] budget`: how many trials a process runs at once, each in a
//! child process under its lease, and how much memory all running trials may hold together.

use serde::{Deserialize, Serialize};

use super::invalid;
use crate::config::{Invalid, MemorySize, RawSweep};

/// How a search packs its trials onto one device.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Packing {
    /// Trials running at once; 1 trains them one after another in this process.
    pub parallel: usize,
    /// The memory all running trials may use together: bytes, or a fraction of the device's
    /// memory (on flex, of the memory the machine has available when the search starts).
    /// `None`: [`DEFAULT_BUDGET_SHARE`] of it on flex; a device with pools needs one.
    pub budget: Option<Budget>,
    /// The trials leave `memory.on_limit` unset, so a child fits its micro-batch in its lease
    /// (`"fit"`) rather than failing at the first breach.
    #[serde(default)]
    pub fit_in_lease: bool,
}

/// `sweep.budget` as written: a size, or a fraction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Budget {
    /// Bytes.
    Bytes(u64),
    /// A share of the available memory, in (0, 1].
    Fraction(f64),
}

/// The budget's default on flex: this share of the memory the machine has available (Linux's
/// `MemAvailable`) when the search starts, leaving the rest to everything else on it.
pub const DEFAULT_BUDGET_SHARE: f64 = 0.5;

impl Default for Packing {
    fn default() -> Self {
        Packing {
            parallel: 1,
            budget: None,
            fit_in_lease: false,
        }
    }
}

impl Packing {
    /// Reads `parallel` and `budget` from the `[sweep]` table.
    pub(in crate::sweep) fn from_raw(raw: &RawSweep) -> Result<Packing, Invalid> {
        let parallel = match raw.parallel {
            None => 1,
            Some(n) if (1..=256).contains(&n) => n as usize,
            Some(n) => {
                return Err(invalid(
                    "sweep.parallel",
                    format!("must be from 1 to 256, got {n}"),
                ))
            }
        };
        let budget = match &raw.budget {
            None => None,
            Some(size) => Some(match MemorySize::parse(size) {
                Ok(MemorySize::Bytes(b)) => Budget::Bytes(b),
                Ok(MemorySize::Fraction(f)) => Budget::Fraction(f),
                Err(e) => return Err(invalid("sweep.budget", e.0)),
            }),
        };
        Ok(Packing {
            parallel,
            budget,
            fit_in_lease: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packing(text: &str) -> Result<Packing, Invalid> {
        Packing::from_raw(&toml::from_str(text).unwrap())
    }

    #[test]
    fn parallel_and_budget_take_counts_sizes_and_fractions() {
        assert_eq!(packing("").unwrap(), Packing::default());
        let p = packing("parallel = 3\nbudget = \"2GiB\"").unwrap();
        assert_eq!((p.parallel, p.budget), (3, Some(Budget::Bytes(2 << 30))));
        let p = packing("budget = 0.25").unwrap();
        assert_eq!(p.budget, Some(Budget::Fraction(0.25)));
    }

    #[test]
    fn bad_values_name_the_key_and_the_value() {
        let Invalid { key, message } = packing("parallel = 0").unwrap_err();
        assert_eq!(key, "sweep.parallel");
        assert!(message.contains("got 0"), "{message}");
        let Invalid { key, message } = packing("budget = \"lots\"").unwrap_err();
        assert_eq!(key, "sweep.budget");
        assert!(message.contains("\"lots\""), "{message}");
        let Invalid { message, .. } = packing("budget = 1.5").unwrap_err();
        assert!(message.contains("1.5"), "{message}");
        // Quoted, a fraction was a budget of 1 B, and every trial failed as larger than it.
        let Invalid { key, message } = packing("budget = \"0.5\"").unwrap_err();
        assert_eq!(key, "sweep.budget");
        assert!(message.contains("is not a byte count"), "{message}");
    }
}
