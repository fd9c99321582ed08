//! Population based training (`method = "pbt"`): a population trained at once, whose weak
//! members copy a strong member's checkpoint at each interval and go on with its settings,
//! perturbed ([`rule`]). The population is a study's trials, each pausing at every interval
//! as ASHA's trials pause at their rungs; once every member has reached an interval, the
//! study decides its exploits (`study/population.rs`), and each member goes on from its own
//! checkpoint or the one it copied, resumed retuned ([`Trainer::retune`](crate::Trainer::retune)).

use serde::{Deserialize, Serialize};

use crate::config::{Invalid, SweepPbt};
use crate::sweep::space::{invalid, Domain};
use crate::train::MAY_RETUNE;

pub mod rule;

pub use rule::{Member, Rule};

/// `[sweep.pbt]`, checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pbt {
    /// Members trained at once.
    pub population: usize,
    /// Epochs between two decisions.
    pub interval: usize,
    /// Who copies, and how settings are perturbed.
    pub rule: Rule,
}

impl Pbt {
    /// `[sweep.pbt]` as read, checked beyond its types: a quantile in (0, 0.5], a probability,
    /// factors above 0.
    pub fn from_raw(raw: &SweepPbt) -> Result<Pbt, Invalid> {
        let SweepPbt {
            population,
            interval,
            quantile,
            resample,
            ref factors,
        } = *raw;
        if !(quantile > 0.0 && quantile <= 0.5) {
            let message = format!("must be in (0, 0.5]: the bottom copies the top, got {quantile}");
            return Err(invalid("sweep.pbt.quantile", message));
        }
        if !(0.0..=1.0).contains(&resample) {
            let message = format!("must be a probability in [0, 1], got {resample}");
            return Err(invalid("sweep.pbt.resample", message));
        }
        if factors.is_empty() || factors.iter().any(|f| !(f.is_finite() && *f > 0.0)) {
            let message = format!("must be numbers > 0, at least one, got {factors:?}");
            return Err(invalid("sweep.pbt.factors", message));
        }
        let rule = Rule {
            quantile,
            resample,
            factors: factors.clone(),
        };
        Ok(Pbt {
            population,
            interval,
            rule,
        })
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
pub(in crate::sweep) fn check_vary(vary: &[(String, Domain)]) -> Result<(), Invalid> {
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
