//! Helpers that every split and scaling shares: classification, regression and series.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::DataError;

/// Shuffles `items` with `seed` and says how many to hold out: `validation_fraction` of them,
/// at least one, and at least one left to train on. Returns the generator, for later shuffles.
pub(crate) fn shuffle_for_split<T>(
    items: &mut [T],
    validation_fraction: f64,
    seed: u64,
) -> Result<(StdRng, usize), DataError> {
    let n = items.len();
    if n < 2 {
        return Err(DataError::Unusable(format!(
            "need at least 2 samples to split into training and validation, got {n}"
        )));
    }
    let mut rng = StdRng::seed_from_u64(seed);
    items.shuffle(&mut rng);
    let n_valid = ((n as f64 * validation_fraction).round() as usize).clamp(1, n - 1);
    Ok((rng, n_valid))
}

/// Mean and (population) standard deviation of `values`; the deviation is 1 where it would be
/// 0, so that dividing by it is always safe.
pub(crate) fn moments(values: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let n = values.clone().count().max(1) as f64;
    let mean = values.clone().sum::<f64>() / n;
    let var = values.map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    (mean, if var > 0.0 { var.sqrt() } else { 1.0 })
}
