//! `[sweep.pbt]`, checked: population based training's population, interval and rule
//! (`method = "pbt"`; the decisions are `sweep/pbt/`'s).

use serde::{Deserialize, Serialize};

use super::{invalid, Domain, MAX_TRIALS};
use crate::config::{Invalid, Number, SweepPbt};
use crate::train::MAY_RETUNE;

/// `[sweep.pbt]`, checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pbt {
    /// Members trained at once.
    pub population: usize,
    /// Epochs between two decisions.
    pub interval: usize,
    /// The share of the population at each end: the bottom copies the top.
    pub quantile: f64,
    /// The probability that a copied setting is drawn again instead of perturbed.
    pub resample: f64,
    /// What a copied range's value is multiplied by, one drawn per key.
    pub factors: Vec<f64>,
}

impl Pbt {
    /// `[sweep.pbt]` as read, checked beyond its types ([`Pbt::check`]).
    pub fn from_raw(raw: &SweepPbt) -> Result<Pbt, Invalid> {
        let SweepPbt {
            population,
            interval,
            quantile,
            resample,
            ref factors,
        } = *raw;
        let pbt = Pbt {
            population,
            interval,
            quantile,
            resample,
            factors: factors.clone(),
        };
        pbt.check()?;
        Ok(pbt)
    }

    /// What the decisions take for granted, wherever the settings were read from (a config's
    /// `[sweep.pbt]`, a sweep's `plan.json`): a population of 2 or more (a member of one has
    /// no other to copy) and at most [`MAX_TRIALS`], an interval above 0, a quantile in
    /// (0, 0.5], a probability, factors above 0. The error names the key under `sweep.pbt`.
    pub fn check(&self) -> Result<(), Invalid> {
        let Pbt {
            population,
            interval,
            quantile,
            resample,
            ref factors,
        } = *self;
        if population < 2 {
            let message = format!(
                "a population of {population} has no other member to copy: none would copy \
                 another; make it 2 or more"
            );
            return Err(invalid("sweep.pbt.population", message));
        }
        if population > MAX_TRIALS {
            let message = format!("must be at most {MAX_TRIALS}, got {population}");
            return Err(invalid("sweep.pbt.population", message));
        }
        if interval == 0 {
            return Err(invalid("sweep.pbt.interval", "must be above 0, got 0"));
        }
        if !(quantile > 0.0 && quantile <= 0.5) {
            let message = format!(
                "must be in (0, 0.5]: the bottom copies the top, got {}",
                Number(quantile)
            );
            return Err(invalid("sweep.pbt.quantile", message));
        }
        if !(0.0..=1.0).contains(&resample) {
            let message = format!("must be a probability in [0, 1], got {}", Number(resample));
            return Err(invalid("sweep.pbt.resample", message));
        }
        if factors.is_empty() || factors.iter().any(|f| !(f.is_finite() && *f > 0.0)) {
            let message = format!("must be numbers > 0, at least one, got {factors:?}");
            return Err(invalid("sweep.pbt.factors", message));
        }
        Ok(())
    }

    /// The epochs a member pauses after, for the population to decide: every `interval`
    /// epochs, before the last.
    pub fn intervals(&self, epochs: usize) -> Vec<usize> {
        (1..)
            .map(|k| k * self.interval)
            .take_while(|&e| e < epochs)
            .collect()
    }
}

/// Refuses a varied key that a member cannot change as it goes on from a checkpoint (one of the
/// model's shape, the data's, the optimizer's kind): it copies weights and optimizer state that
/// must fit.
pub(super) fn check_vary(vary: &[(String, Domain)]) -> Result<(), Invalid> {
    match vary
        .iter()
        .find(|(key, _)| !MAY_RETUNE.contains(&key.as_str()))
    {
        None => Ok(()),
        Some((key, _)) => Err(invalid(
            &format!("sweep.vary.{key}"),
            format!(
                "population based training varies what a member can change as it goes on from \
                 a copied checkpoint: {}",
                MAY_RETUNE.join(", ")
            ),
        )),
    }
}
