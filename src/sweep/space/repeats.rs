//! A sweep of runs as a search (`tidemark sweep --runs N`): one config trained N times, its
//! trials a grid over `run.seed` alone, and how a search is told to be one.

use super::{Domain, Liveness, Method, Order, Packing, Space, MAX_TRIALS};
use crate::config::{defaults, Monitor};
use crate::error::UsageError;

/// The key a sweep of runs varies ([`Space::repeats`]).
const REPEAT_KEY: &str = "run.seed";

/// Whether a search of `method` over `vary` is a sweep of runs: a grid over [`REPEAT_KEY`]
/// alone, as [`Space::repeats`] makes it (or a `[sweep]` table writes it by hand).
pub fn repeats(method: Method, vary: &[(String, Domain)]) -> bool {
    method == Method::Grid && matches!(vary, [(key, Domain::Values(_))] if key == REPEAT_KEY)
}

impl Space {
    /// `tidemark sweep --runs N`: one config trained `runs` times, one after another in this
    /// process as listed, with the seeds `seed`, `seed + 1`, ...: a grid over `run.seed` alone,
    /// whose trials are the runs.
    pub fn repeats(seed: u64, runs: usize) -> Result<Space, UsageError> {
        let fail = |message: String| Err(UsageError::new(format!("--runs {runs}"), message));
        if !(1..=MAX_TRIALS).contains(&runs) {
            return fail(format!("must be 1 to {MAX_TRIALS}, got {runs}"));
        }
        let seeds = (0..runs as u64)
            .map(|i| {
                let seed = seed.checked_add(i).and_then(|s| i64::try_from(s).ok());
                seed.map(toml::Value::Integer)
            })
            .collect::<Option<Vec<_>>>();
        let Some(seeds) = seeds else {
            return fail(format!(
                "{runs} runs from run.seed = {seed} go past the largest seed a config holds"
            ));
        };
        let monitor =
            Monitor::new(defaults::MONITOR, None).expect("val_loss is a validation figure");
        Ok(Space {
            method: Method::Grid,
            trials: runs,
            seed: 0,
            monitor,
            vary: vec![(REPEAT_KEY.to_string(), Domain::Values(seeds))],
            order: Order::Listed,
            packing: Packing::default(),
            prune: None,
            study: Liveness::default(),
            pbt: None,
        })
    }

    /// Whether this search is [`Space::repeats`]'s: its trials one config's runs.
    pub fn is_repeat(&self) -> bool {
        repeats(self.method, &self.vary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_a_grid_of_seeds_or_refused_naming_the_flag() {
        let space = Space::repeats(7, 3).unwrap();
        let seeds: Vec<_> = (space.trials().into_iter())
            .map(|t| t.values[REPEAT_KEY].as_integer().unwrap())
            .collect();
        assert_eq!(seeds, [7, 8, 9]);
        assert!(space.is_repeat() && space.order == Order::Listed);
        let refused = Space::repeats(0, 0).unwrap_err().to_string();
        assert!(refused.starts_with("--runs 0: must be 1 to"), "{refused}");
        let past = Space::repeats(i64::MAX as u64, 2).unwrap_err().to_string();
        assert!(past.contains("go past the largest seed"), "{past}");
    }
}
