//! The `[sweep]` table: what a search varies, how it draws its trials, and what it ranks
//! them by. Read from the config file in two stages, as a run's keys are: as written
//! ([`RawSweep`], part of the file's [`RawConfig`](crate::config::RawConfig), so that a
//! misspelt or mistyped key is refused by `tidemark train` too), then validated here into a
//! [`Space`] by `tidemark sweep` and `validate`, each error located at its key's line.
//!
//! ```toml
//! [sweep]
//! method = "random"          # or "grid": every combination of the lists; or "tpe" (tpe.rs)
//! trials = 20                # random and tpe only
//! seed = 7                   # random draws (default 0)
//! monitor = "val_loss"       # default; mode "min" ("max" for an accuracy)
//! order = "largest_first"    # default; or "listed"
//! parallel = 2               # trials at once, each in a child process under its lease
//! budget = "4GiB"            # what the running trials may hold together (packing.rs)
//!
//! [sweep.prune]              # stop trials that are behind (prune.rs)
//! method = "asha"            # or "median"
//!
//! [sweep.vary]
//! train.lr = { min = 1e-4, max = 1e-2, log = true }   # random and tpe only
//! model.hidden = [[64], [128], [256, 256]]
//! ```

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use crate::config::{defaults, ConfigError, Invalid, Monitor, MonitorMode, RawSweep};

mod domain;
mod file;
mod literal;
mod liveness;
mod packing;
mod pbt;
mod prune;
mod repeats;
pub mod tpe;
mod vary;

pub(in crate::sweep) use domain::draw;
use vary::{trials, vary};

pub use domain::DomainError;
pub use literal::{literal, number, rounded};
pub use liveness::Liveness;
pub use packing::{Budget, Packing, DEFAULT_BUDGET_SHARE};
pub use pbt::Pbt;
pub use prune::{PruneConfig, PruneMethod};
pub use repeats::repeats;

/// The most trials a search plans (random and TPE draws, a grid's combinations, a population's
/// members): each is a directory and a row, and a count past it is a slip of the keyboard, not a
/// search to allocate.
pub const MAX_TRIALS: usize = 100_000;

/// How a search picks its trials.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Every combination of the listed values, in key order.
    Grid,
    /// `trials` draws, from the seed.
    Random,
    /// `trials` trials: random draws first, then TPE's from the finished trials' results
    /// ([`Space::tpe_trial`]).
    Tpe,
    /// Population based training: `[sweep.pbt] population` random draws, trained at once,
    /// whose weak members copy the strong at every interval (docs/search.md, "Population based
    /// training").
    Pbt,
}

/// The order a process trains its trials in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// The largest probed step first: one step of each trial is probed before any trains.
    #[default]
    LargestFirst,
    /// As the trials are numbered, without probes.
    Listed,
}

/// What one key takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Domain {
    /// One of these values.
    Values(Vec<toml::Value>),
    /// A number in `[min, max]`, uniform or (with `log`) log-uniform; integers when both ends
    /// are.
    Range {
        /// The lowest value.
        min: f64,
        /// The highest value.
        max: f64,
        /// Log-uniform (for rates and decays).
        log: bool,
        /// Whole numbers (both ends are integers).
        int: bool,
    },
}

/// A validated `[sweep]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct Space {
    /// Grid, random or TPE.
    pub method: Method,
    /// Trials drawn (random, TPE) or combinations (grid).
    pub trials: usize,
    /// The random draws' seed.
    pub seed: u64,
    /// The metric trials are ranked by (`val_loss`, `val_accuracy`, ...), and which way is
    /// better.
    pub monitor: Monitor,
    /// The keys varied, in order, with what each takes.
    pub vary: Vec<(String, Domain)>,
    /// The order a process trains its trials in.
    pub order: Order,
    /// Trials at once, and the memory they may hold together.
    pub packing: Packing,
    /// The pruner, if any (`[sweep.prune]`).
    pub prune: Option<PruneConfig>,
    /// How a shared study's workers tell that a trial's worker lives (`tidemark sweep
    /// --storage`).
    pub study: Liveness,
    /// With `method = "pbt"`: the population, its interval and its rule (`[sweep.pbt]`).
    pub pbt: Option<Pbt>,
}

/// One trial: the value of each varied key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// 1-based.
    pub number: usize,
    /// Each varied key's value.
    pub values: BTreeMap<String, toml::Value>,
}

impl Trial {
    /// Its run directory's name: `trial-007`.
    pub fn name(&self) -> String {
        Trial::name_of(self.number)
    }

    /// Trial `number`'s run directory's name.
    pub fn name_of(number: usize) -> String {
        format!("trial-{number:03}")
    }

    /// `train.lr = 0.001, model.hidden = [64]`.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .values
            .iter()
            .map(|(k, v)| format!("{k} = {}", literal(v)))
            .collect();
        parts.join(", ")
    }
}

/// `key`'s error `message`, said after the key: `sweep.trials: must be >= 1, got 0`.
pub(in crate::sweep) fn invalid(key: &str, message: impl std::fmt::Display) -> Invalid {
    Invalid {
        key: key.to_string(),
        message: format!("{key}: {message}"),
    }
}

/// `value`, the value of `key`, named by one of `options`; `default` when it is absent.
fn choice<T: Copy>(
    key: &str,
    value: Option<&str>,
    default: T,
    options: &[(&str, T)],
) -> Result<T, Invalid> {
    let Some(value) = value else {
        return Ok(default);
    };
    let named = options.iter().find(|(name, _)| value == *name);
    named.map(|&(_, choice)| choice).ok_or_else(|| {
        let quoted: Vec<String> = options.iter().map(|(n, _)| format!("\"{n}\"")).collect();
        let names = match quoted.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => quoted.concat(),
        };
        invalid(key, format!("must be {names}, got \"{value}\""))
    })
}

/// Refuses `order = "listed"` with trials in parallel: a lease needs each trial's probe.
pub fn check_order(order: Order, parallel: usize, origin: &str) -> Result<(), ConfigError> {
    match order == Order::Listed && parallel > 1 {
        false => Ok(()),
        true => Err(ConfigError {
            origin: origin.to_string(),
            key: Some("sweep.order".into()),
            message: format!(
                "sweep.order: \"listed\" trains without probes, and {parallel} trials at once \
                 (sweep.parallel > 1) need one probed step of each trial for its memory lease; \
                 remove sweep.order, or train one at a time"
            ),
        }),
    }
}

impl Space {
    /// Validates the `[sweep]` table as written (the config's first stage, [`RawSweep`]).
    pub fn from_raw(raw: &RawSweep) -> Result<Space, Invalid> {
        let fail = invalid;
        let methods = [
            ("grid", Method::Grid),
            ("random", Method::Random),
            ("tpe", Method::Tpe),
            ("pbt", Method::Pbt),
        ];
        let method = choice(
            "sweep.method",
            raw.method.as_deref(),
            Method::Grid,
            &methods,
        )?;
        let vary = vary(raw.vary.as_ref(), method)?;
        let pbt = Self::pbt(raw, method, &vary)?;
        let trials = match &pbt {
            Some(pbt) => pbt.population,
            None => trials(raw.trials, method, &vary)?,
        };
        let seed = match raw.seed {
            None => 0,
            Some(s) if s >= 0 => s as u64,
            Some(s) => return Err(fail("sweep.seed", format!("must be >= 0, got {s}"))),
        };
        let name = (raw.monitor.clone()).unwrap_or_else(|| defaults::MONITOR.to_string());
        let natural = Monitor::natural_mode(&name).map_err(|m| fail("sweep.monitor", m.0))?;
        let modes = [("min", MonitorMode::Min), ("max", MonitorMode::Max)];
        let mode = choice("sweep.mode", raw.mode.as_deref(), natural, &modes)?;
        let monitor = Monitor::new(name, Some(mode)).map_err(|m| fail("sweep.monitor", m.0))?;
        let orders = [
            ("largest_first", Order::LargestFirst),
            ("listed", Order::Listed),
        ];
        let order = choice(
            "sweep.order",
            raw.order.as_deref(),
            Order::LargestFirst,
            &orders,
        )?;
        let packing = Packing::from_raw(raw)?;
        if let Err(e) = check_order(order, packing.parallel, "") {
            let key = "sweep.order".to_string();
            return Err(Invalid {
                key,
                message: e.message,
            });
        }
        let prune = match &raw.prune {
            None => None,
            Some(prune) => PruneConfig::from_raw(prune)?,
        };
        let study = Liveness::from_raw(raw)?;
        Ok(Space {
            method,
            trials,
            seed,
            monitor,
            vary,
            order,
            packing,
            prune,
            study,
            pbt,
        })
    }

    /// Whether it draws its trials past the random start from the results in by then (TPE):
    /// those are not known before, so its trials are created in their numbers' order, a
    /// finished trial's parameters are kept, and its identity counts its trials.
    pub fn draws_from_results(&self) -> bool {
        self.method == Method::Tpe
    }

    /// `[sweep.pbt]`, with `method = "pbt"` alone: its population is its trials, it prunes no
    /// member, and it varies only what a member can change as it goes on.
    fn pbt(
        raw: &RawSweep,
        method: Method,
        vary: &[(String, Domain)],
    ) -> Result<Option<Pbt>, Invalid> {
        if method != Method::Pbt {
            return match raw.pbt {
                Some(_) => Err(invalid("sweep.pbt", "needs method = \"pbt\"")),
                None => Ok(None),
            };
        }
        if raw.trials.is_some() {
            let message = "with method = \"pbt\", the members are sweep.pbt.population";
            return Err(invalid("sweep.trials", message));
        }
        if raw.prune.is_some() {
            let message = "population based training prunes no member: its weak members copy \
                           the strong at every interval instead; remove [sweep.prune]";
            return Err(invalid("sweep.prune", message));
        }
        pbt::check_vary(vary)?;
        Pbt::from_raw(&raw.pbt.clone().unwrap_or_default()).map(Some)
    }

    /// The trials, in order: a grid's combinations (the last key varying fastest), or the
    /// random draws from the seed (the same seed draws the same trials). For TPE, the random
    /// method's draws too, as placeholders: a search keeps the first [`Space::tpe_startup`] and
    /// replaces each later one with [`Space::tpe_trial`]'s draw from the results in by then.
    pub fn trials(&self) -> Vec<Trial> {
        match self.method {
            Method::Grid => self.grid(),
            Method::Random | Method::Tpe | Method::Pbt => self.random(),
        }
    }

    fn grid(&self) -> Vec<Trial> {
        let mut combos: Vec<BTreeMap<String, toml::Value>> = vec![BTreeMap::new()];
        for (key, domain) in &self.vary {
            let Domain::Values(values) = domain else {
                unreachable!("validated: a grid takes lists")
            };
            combos = combos
                .into_iter()
                .flat_map(|combo| {
                    values.iter().map(move |v| {
                        let mut next = combo.clone();
                        next.insert(key.clone(), v.clone());
                        next
                    })
                })
                .collect();
        }
        combos
            .into_iter()
            .enumerate()
            .map(|(i, values)| Trial {
                number: i + 1,
                values,
            })
            .collect()
    }

    fn random(&self) -> Vec<Trial> {
        let mut rng = StdRng::seed_from_u64(self.seed);
        (1..=self.trials)
            .map(|number| Trial {
                number,
                values: self.draw_all(&mut rng),
            })
            .collect()
    }

    /// The values of random trial `number` (1-based) alone: the seed's draws replayed up to it,
    /// so it equals `trials()[number - 1]`'s for any number of trials.
    fn random_values(&self, number: usize) -> BTreeMap<String, toml::Value> {
        let mut rng = StdRng::seed_from_u64(self.seed);
        let mut values = self.draw_all(&mut rng);
        for _ in 1..number {
            values = self.draw_all(&mut rng);
        }
        values
    }

    /// One draw of every varied key, in key order.
    fn draw_all(&self, rng: &mut StdRng) -> BTreeMap<String, toml::Value> {
        self.vary
            .iter()
            .map(|(key, domain)| (key.clone(), draw(domain, rng)))
            .collect()
    }
}

#[cfg(test)]
mod tests;
