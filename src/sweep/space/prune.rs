//! The `[sweep.prune]` table: which pruner, its first rung, and its reduction.
//!
//! ```toml
//! [sweep.prune]
//! method = "asha"     # or "median"; "none" turns it off (--set sweep.prune.method=\"none\")
//! min_epochs = 1      # ASHA's first rung; the median rule's first epoch that may prune
//! reduction = 3       # ASHA's η: a rung keeps the best 1/η, and the next is η times later
//! startup = 5         # median: completed trials before any is pruned (Optuna's default)
//! ```

use serde::{Deserialize, Serialize};

use super::invalid;
use crate::config::{Invalid, RawPrune};

/// Which pruner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PruneMethod {
    /// Asynchronous successive halving (Li et al., 2018), with pause and promotion.
    Asha,
    /// Optuna's `MedianPruner`: behind the completed trials' median at the same epoch.
    Median,
}

/// A validated `[sweep.prune]` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PruneConfig {
    /// ASHA or the median rule.
    pub method: PruneMethod,
    /// ASHA's first rung, in epochs; the median rule prunes from this epoch on.
    pub min_epochs: usize,
    /// ASHA's η (at least 2).
    pub reduction: usize,
    /// The median rule's completed trials before it prunes any.
    pub startup: usize,
}

/// ASHA's default η, as in Li et al. and Ray Tune.
pub const DEFAULT_REDUCTION: usize = 3;
/// The median rule's default completed trials before it prunes, as Optuna's.
pub const DEFAULT_STARTUP: usize = 5;

impl PruneConfig {
    /// Validates the `[sweep.prune]` table as written (`None` for `method = "none"`, which
    /// turns a config's pruner off from the command line).
    pub fn from_raw(raw: &RawPrune) -> Result<Option<PruneConfig>, Invalid> {
        let fail = |key: &str, message: String| invalid(&format!("sweep.prune.{key}"), message);
        let method = match raw.method.as_deref() {
            Some("asha") => PruneMethod::Asha,
            Some("median") => PruneMethod::Median,
            Some("none") => return Ok(None),
            other => {
                let got = other.map_or("nothing".to_string(), |m| format!("\"{m}\""));
                return Err(fail(
                    "method",
                    format!("must be \"asha\", \"median\" or \"none\", got {got}"),
                ));
            }
        };
        let count = |key: &str, value: Option<i64>, default: usize, least: usize| match value {
            None => Ok(default),
            Some(n) if n >= least as i64 => Ok(n as usize),
            Some(n) => Err(fail(key, format!("must be >= {least}, got {n}"))),
        };
        Ok(Some(PruneConfig {
            method,
            min_epochs: count("min_epochs", raw.min_epochs, 1, 1)?,
            reduction: count("reduction", raw.reduction, DEFAULT_REDUCTION, 2)?,
            startup: count("startup", raw.startup, DEFAULT_STARTUP, 0)?,
        }))
    }

    /// Refuses a first rung at or past the trials' last epoch: nothing could be pruned.
    pub fn check_epochs(&self, epochs: usize) -> Result<(), Invalid> {
        match self.min_epochs < epochs {
            true => Ok(()),
            false => Err(invalid(
                "sweep.prune.min_epochs",
                format!(
                    "must be below train.epochs ({epochs}), got {}: a trial is judged after an \
                     epoch before its last",
                    self.min_epochs
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<PruneConfig, Invalid> {
        let config = PruneConfig::from_raw(&toml::from_str(text).unwrap())?;
        Ok(config.expect("a pruner"))
    }

    #[test]
    fn a_prune_table_takes_defaults_and_names_a_bad_key() {
        let asha = read("method = \"asha\"").unwrap();
        assert_eq!((asha.min_epochs, asha.reduction, asha.startup), (1, 3, 5));
        let e = read("method = \"hyperband\"").unwrap_err();
        assert_eq!(e.key, "sweep.prune.method");
        assert!(
            e.message
                .contains("\"asha\", \"median\" or \"none\", got \"hyperband\""),
            "{}",
            e.message
        );
        let none = toml::from_str("method = \"none\"\nmin_epochs = 2").unwrap();
        assert_eq!(PruneConfig::from_raw(&none), Ok(None));
        let e = read("method = \"asha\"\nreduction = 1").unwrap_err();
        assert_eq!(e.key, "sweep.prune.reduction");
        assert_eq!(e.message, "sweep.prune.reduction: must be >= 2, got 1");
        // An unknown key is the first stage's: the table as written.
        let e = toml::from_str::<RawPrune>("method = \"median\"\nwarmup = 2").unwrap_err();
        assert!(e.to_string().contains("unknown field `warmup`"), "{e}");
        let e = asha.check_epochs(1).unwrap_err().message;
        assert!(
            e.starts_with("sweep.prune.min_epochs: must be below train.epochs (1), got 1"),
            "{e}"
        );
    }
}
