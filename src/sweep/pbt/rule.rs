//! Population based training's decision at an interval (Jaderberg et al., 2017), pure: who
//! copies whom, and to what settings. Ray Tune's `PopulationBasedTraining` is the reference
//! (`quantile_fraction`, `resample_probability`, `perturbation_factors`), in its synchronous
//! form: every member has reached the interval's epoch before any is decided, so the decision
//! is a function of the study alone, whatever order the members finished in, on how many
//! workers, killed and resumed or not.
//!
//! - Exploit: the members are ranked by their value at the interval (a NaN last); each of the
//!   bottom `⌈n · quantile⌉` (at most `⌊n / 2⌋`) copies one of the top as many, drawn.
//! - Explore: the copier takes the copied member's settings, each varied key perturbed: with
//!   probability `resample` drawn again from its `[sweep.vary]` domain; else a range's value
//!   multiplied by one of the factors (1.2 or 0.8), kept inside the range (Ray does not bound
//!   it), and a list's moved to a neighbour in the list.
//!
//! The draws come from the search's seed and the interval's epoch.

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::config::MonitorMode;
use crate::sweep::space::{draw, number, Domain, Pbt};

/// `[sweep.pbt]`'s rule: who copies, and how settings are perturbed.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// The share of the population at each end: the bottom copies the top.
    pub quantile: f64,
    /// The probability that a key is drawn again instead of perturbed.
    pub resample: f64,
    /// What a range's value is multiplied by, one drawn per key.
    pub factors: Vec<f64>,
}

impl Default for Rule {
    /// Ray Tune's defaults: a quarter at each end, a quarter of keys drawn again, ×1.2 or ×0.8.
    fn default() -> Self {
        Rule {
            quantile: 0.25,
            resample: 0.25,
            factors: vec![1.2, 0.8],
        }
    }
}

/// A member as it stands at an interval: its number, its value there, its settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// The trial's number.
    pub number: usize,
    /// Its monitored value at the interval's epoch (NaN: diverged, ranked last).
    pub value: f64,
    /// Each varied key's value it trained the interval with.
    pub values: BTreeMap<String, toml::Value>,
}

/// A member that copies another at an interval, and the settings it goes on with.
#[derive(Debug, Clone, PartialEq)]
pub struct Exploit {
    /// The member that copies.
    pub member: usize,
    /// The member copied: its checkpoint at the interval, and its settings, perturbed.
    pub from: usize,
    /// The settings it goes on with.
    pub values: BTreeMap<String, toml::Value>,
}

impl Rule {
    /// The rule `[sweep.pbt]` sets.
    pub fn of(pbt: &Pbt) -> Rule {
        Rule {
            quantile: pbt.quantile,
            resample: pbt.resample,
            factors: pbt.factors.clone(),
        }
    }

    /// How many members at each end of `n` copy and are copied.
    pub fn ends(&self, n: usize) -> usize {
        let share = (n as f64 * self.quantile).ceil() as usize;
        share.min(n / 2)
    }

    /// The exploits at the interval that ends after `epoch` epochs, in the order of the members
    /// that copy (the worst first): `members` ranked by `mode`, the draws from `seed`.
    pub fn decide(
        &self,
        members: &[Member],
        vary: &[(String, Domain)],
        mode: MonitorMode,
        seed: u64,
        epoch: usize,
    ) -> Vec<Exploit> {
        let mut ranked: Vec<&Member> = members.iter().collect();
        // The best first; ties by number, so that the ranking is the study's alone.
        ranked.sort_by(|a, b| {
            let (a_value, b_value) = (nan_last(a.value, mode), nan_last(b.value, mode));
            (mode.order(a_value, b_value)).then(a.number.cmp(&b.number))
        });
        let ends = self.ends(ranked.len());
        let top = &ranked[..ends];
        let mut rng = StdRng::seed_from_u64(interval_seed(seed, epoch));
        ranked[ranked.len() - ends..]
            .iter()
            .rev()
            .map(|member| {
                let from = top[rng.random_range(0..top.len())];
                Exploit {
                    member: member.number,
                    from: from.number,
                    values: self.explore(&from.values, vary, &mut rng),
                }
            })
            .collect()
    }

    /// `values` perturbed, each key of `vary` in turn.
    pub fn explore(
        &self,
        values: &BTreeMap<String, toml::Value>,
        vary: &[(String, Domain)],
        rng: &mut StdRng,
    ) -> BTreeMap<String, toml::Value> {
        let mut out = values.clone();
        for (key, domain) in vary {
            let resampled = rng.random::<f64>() < self.resample;
            let value = match (domain, values.get(key)) {
                (_, None) => draw(domain, rng),
                (_, Some(_)) if resampled => draw(domain, rng),
                (Domain::Values(list), Some(current)) => {
                    match list.iter().position(|v| v == current) {
                        // A value the list does not hold (set by hand): drawn from the list.
                        None => draw(domain, rng),
                        Some(at) => {
                            let step = [-1i64, 1][rng.random_range(0..2)];
                            let to = (at as i64 + step).clamp(0, list.len() as i64 - 1);
                            list[to as usize].clone()
                        }
                    }
                }
                (Domain::Range { min, max, int, .. }, Some(current)) => {
                    let factor = self.factors[rng.random_range(0..self.factors.len())];
                    let x = number(current)
                        .map_or(*min, |x| x * factor)
                        .clamp(*min, *max);
                    match int {
                        true => toml::Value::Integer(x.round() as i64),
                        false => toml::Value::Float(x),
                    }
                }
            };
            out.insert(key.clone(), value);
        }
        out
    }
}

/// A NaN as the worst value of `mode`.
fn nan_last(value: f64, mode: MonitorMode) -> f64 {
    match (value.is_nan(), mode) {
        (false, _) => value,
        (true, MonitorMode::Min) => f64::INFINITY,
        (true, MonitorMode::Max) => f64::NEG_INFINITY,
    }
}

/// The draws' seed at the interval after `epoch` epochs of a search seeded `seed`
/// (SplitMix64's finaliser, so that neighbouring intervals draw unrelated numbers).
fn interval_seed(seed: u64, epoch: usize) -> u64 {
    let mut z = seed ^ (epoch as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests;
