//! `--set` on `sweep --resume`: what a resumed search may change.
//!
//! A search's trials, their values, its metric, its order, its pruner and TPE are planned in
//! its journal when it starts; a change to them would rank two searches as one, so it is
//! refused, naming the key. How many trials run at once (`sweep.parallel`) and the memory they
//! share (`sweep.budget`) change how the search runs, not what it finds: they are applied, and
//! said. The keys outside `[sweep]` follow a resumed run's rule (`train.epochs`, `memory.*`,
//! ...: [`crate::train::resume`]).

use super::space::Packing;
use crate::config::{ConfigError, Invalid, Override, RawSweep};
use crate::error::Error;

/// The `[sweep]` keys a resumed search takes.
const MAY_CHANGE: [&str; 2] = ["sweep.parallel", "sweep.budget"];

/// What `--set` changes in a resumed search's packing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changes {
    /// `sweep.parallel`.
    pub parallel: Option<usize>,
    /// `sweep.budget`, as written.
    pub budget: Option<super::Budget>,
}

impl Changes {
    /// The changes `overrides` make to a resumed search's `[sweep]`; a `sweep.*` key it
    /// cannot change, or a value its key refuses, is an error naming it.
    pub fn of(overrides: &[Override]) -> Result<Changes, Error> {
        let mut table = toml::Table::new();
        for o in overrides.iter().filter(|o| o.key.starts_with("sweep.")) {
            if !MAY_CHANGE.contains(&o.key.as_str()) {
                return Err(refused(
                    o,
                    "a resumed search keeps the trials, metric, order, \
                     pruner and draws planned in its journal; only sweep.parallel and \
                     sweep.budget may change (start a new search for the rest)",
                ));
            }
            let key = o.key.trim_start_matches("sweep.");
            table.insert(key.to_string(), o.value.clone());
        }
        let raw: RawSweep =
            toml::Value::Table(table.clone())
                .try_into()
                .map_err(|e: toml::de::Error| {
                    let set: Vec<&str> = (overrides.iter())
                        .filter(|o| o.key.starts_with("sweep."))
                        .map(|o| o.text.as_str())
                        .collect();
                    Error::Config(ConfigError {
                        origin: format!("--set {}", set.join(" --set ")),
                        key: None,
                        message: e.message().to_string(),
                    })
                })?;
        let packing = Packing::from_raw(&raw).map_err(|Invalid { key, message }| {
            let o = overrides.iter().rfind(|o| o.key == key).expect("a key set");
            Error::Config(ConfigError {
                origin: format!("--set {}", o.text),
                key: Some(key),
                message,
            })
        })?;
        Ok(Changes {
            parallel: table.contains_key("parallel").then_some(packing.parallel),
            budget: packing.budget,
        })
    }

    /// Applies them to `packing`; returns a line for each, for the user.
    pub fn apply(&self, packing: &mut Packing) -> Vec<String> {
        let mut said = Vec::new();
        if let Some(parallel) = self.parallel.filter(|&p| p != packing.parallel) {
            said.push(format!(
                "resumed with sweep.parallel = {parallel} (planned {})",
                packing.parallel
            ));
            packing.parallel = parallel;
        }
        if let Some(budget) = self.budget.filter(|&b| Some(b) != packing.budget) {
            said.push(format!("resumed with sweep.budget = {}", describe(budget)));
            packing.budget = Some(budget);
        }
        said
    }
}

fn describe(budget: super::Budget) -> String {
    match budget {
        super::Budget::Bytes(b) => crate::memory::format_bytes(b),
        super::Budget::Fraction(f) => format!("{f} of the device's memory"),
    }
}

fn refused(o: &Override, message: &str) -> Error {
    Error::Config(ConfigError {
        origin: format!("--set {}", o.text),
        key: Some(o.key.clone()),
        message: format!("{}: {message}", o.key),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(text: &str) -> Result<Changes, Error> {
        Changes::of(&[Override::parse(text).unwrap()])
    }

    #[test]
    fn parallel_and_budget_change_and_every_other_sweep_key_is_refused_by_name() {
        assert_eq!(set("sweep.parallel=3").unwrap().parallel, Some(3));
        let budget = set("sweep.budget=\"2GiB\"").unwrap().budget;
        assert_eq!(budget, Some(super::super::Budget::Bytes(2 << 30)));
        let e = set("sweep.prune.method=\"median\"")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("sweep.prune.method") && e.contains("planned in its journal"),
            "{e}"
        );
        let e = set("sweep.budget=\"lots\"").unwrap_err().to_string();
        assert!(e.contains("sweep.budget") && e.contains("lots"), "{e}");
        let e = set("sweep.parallel=0").unwrap_err().to_string();
        assert!(e.contains("sweep.parallel") && e.contains("got 0"), "{e}");
        // Keys outside [sweep] are the resumed runs' business.
        let none = Changes::of(&[Override::parse("train.epochs=9").unwrap()]).unwrap();
        assert_eq!(none, Changes::default());
    }
}
