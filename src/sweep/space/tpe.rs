//! The TPE method (`[sweep] method = "tpe"`): a trial's values drawn by the Tree-structured
//! Parzen Estimator of the `tpe` crate from the results of the trials finished before it.
//!
//! The first trials are the random method's draws (the same seed draws the same ones); each
//! later trial is drawn from the history: one [`tpe::TpeOptimizer`] per varied key, told each
//! finished trial's value of that key with the trial's monitored value, asked for the next. The
//! keys are searched independently, as in Optuna's default (univariate) TPE sampler.
//!
//! How a key's domain maps onto the line TPE searches (its range excludes its end):
//! - a list: the index of a value in it, on `[0, len)` with the histogram estimator;
//! - a range: the value itself, or its logarithm for `log = true`, on `[min, max]` with the
//!   Parzen estimator (the end taken one ulp past `max`, so that `max` itself can be told);
//! - an integer range: on `[min - 0.5, max + 0.5]` (in logarithms for `log = true`), so that
//!   each integer owns a cell of width 1 around it, as in the random draw, which rounds; TPE's
//!   draw is rounded and clamped to `[min, max]`.
//!
//! A draw depends only on the space, the trial's number and the history (taken in trial
//! order), so a resumed or repeated search draws the same trial from the same results.

use std::collections::BTreeMap;

use rand_tpe::rngs::StdRng;
use rand_tpe::SeedableRng;
use tpe::range::Range;
use tpe::TpeOptimizer;

use super::{Domain, Space, Trial};
use crate::config::MonitorMode;

/// The random trials a TPE search starts with, as Optuna's default `n_startup_trials`: a search
/// of fewer than 20 trials starts with half of them ([`Space::tpe_startup`]).
pub const TPE_STARTUP: usize = 10;

impl Space {
    /// The random trials this TPE search starts with: `TPE_STARTUP` (10), or half of `trials`
    /// (rounded up) when that is fewer, so that a short search still has TPE's draws after them.
    pub fn tpe_startup(&self) -> usize {
        TPE_STARTUP.min(self.trials.div_ceil(2))
    }

    /// Trial `number` (1-based) of a TPE search, drawn from `history` (`draw_tpe`).
    pub fn tpe_trial(&self, number: usize, history: &[(&Trial, f64)]) -> Trial {
        Trial {
            number,
            values: draw_tpe(self, number, history),
        }
    }
}

/// The values of trial `number` (1-based) of a TPE search. The first [`Space::tpe_startup`]
/// trials are random draws, exactly the random method's with the same seed (`trials()[number -
/// 1]`), as is any trial drawn with fewer than 2 results in `history`; later ones are drawn by
/// TPE from `history`: each finished trial (completed or pruned, one entry each) with its
/// monitored value (a pruned trial's last reported one). The space's `mode` says whether lower
/// or higher is better; a NaN value counts as the worst. A history value a key's domain does not
/// hold (not in its list, outside its range) is left out for that key.
///
/// Pure: the same space, number and history (in any order: it is taken in trial order) give the
/// same values. The random source is seeded from the space's seed and `number` alone.
pub fn draw_tpe(
    space: &Space,
    number: usize,
    history: &[(&Trial, f64)],
) -> BTreeMap<String, toml::Value> {
    if number <= space.tpe_startup() || history.len() < 2 {
        return space.random_values(number);
    }
    let mut history = history.to_vec();
    // Stable: TPE splits tied results in the order told, which is then the trials' order.
    history.sort_by_key(|(trial, _)| trial.number);
    // What TPE minimises.
    let score = |value: f64| {
        let score = match space.monitor.mode() {
            MonitorMode::Min => value,
            MonitorMode::Max => -value,
        };
        match score.is_nan() {
            true => f64::INFINITY,
            false => score,
        }
    };
    let seed = space.seed ^ (number as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut rng = StdRng::seed_from_u64(seed);
    space
        .vary
        .iter()
        .map(|(key, domain)| {
            let line = line(domain);
            let estimator = match domain {
                Domain::Values(_) => tpe::histogram_estimator(),
                Domain::Range { .. } => tpe::parzen_estimator(),
            };
            let mut optimizer = TpeOptimizer::new(estimator, line);
            for (trial, value) in &history {
                let x = trial.values.get(key).and_then(|v| position(domain, v));
                if let Some(x) = x.filter(|x| line.contains(*x)) {
                    optimizer
                        .tell(x, score(*value))
                        .expect("a position in the line, and a score that is not NaN");
                }
            }
            let x = optimizer
                .ask(&mut rng)
                .unwrap_or_else(|never| match never {});
            (key.clone(), value_at(domain, x))
        })
        .collect()
}

/// The line TPE searches for `domain` (the module's doc says how).
fn line(domain: &Domain) -> Range {
    let (start, end) = match *domain {
        Domain::Values(ref values) => (0.0, values.len() as f64),
        Domain::Range { min, max, log, int } => {
            let (min, max) = match int {
                true => (min - 0.5, max + 0.5),
                false => (min, max),
            };
            let (min, max) = match log {
                true => (min.ln(), max.ln()),
                false => (min, max),
            };
            (min, max.next_up())
        }
    };
    Range::new(start, end).expect("validated: a list is not empty, and min < max")
}

/// Where `value` lies on `domain`'s line; `None` when the domain does not hold it.
fn position(domain: &Domain, value: &toml::Value) -> Option<f64> {
    match *domain {
        Domain::Values(ref values) => values.iter().position(|v| v == value).map(|i| i as f64),
        Domain::Range { min, max, log, .. } => {
            let x = match value {
                toml::Value::Integer(i) => *i as f64,
                toml::Value::Float(f) => *f,
                _ => return None,
            };
            match ((min..=max).contains(&x), log) {
                (false, _) => None,
                (true, true) => Some(x.ln()),
                (true, false) => Some(x),
            }
        }
    }
}

/// The value of `domain` at `x` on its line: the list's member, or the range's number (rounded
/// for an integer range), clamped to the domain.
fn value_at(domain: &Domain, x: f64) -> toml::Value {
    match *domain {
        Domain::Values(ref values) => values[(x.max(0.0) as usize).min(values.len() - 1)].clone(),
        Domain::Range { min, max, log, int } => {
            let x = match log {
                true => x.exp(),
                false => x,
            };
            match int {
                true => toml::Value::Integer(x.round().clamp(min, max) as i64),
                false => toml::Value::Float(x.clamp(min, max)),
            }
        }
    }
}
