//! Datasets and batching: synthetic classification, CSV files (a class label or a value to
//! predict), MNIST-format (IDX) files and time series, split into training and validation sets,
//! and turned into tensors by Burn [`Batcher`](burn::data::dataloader::batcher::Batcher)s.

mod batcher;
mod csv;
mod csv_error;
mod idx;
mod loader;
mod regression;
mod scaling;
pub mod series;
mod split;
mod synthetic;

pub use batcher::{ClassificationBatch, ClassificationBatcher, Row, RowBatch, RowBatcher};
pub use csv::{load_csv, load_csv_inputs, load_csv_rows, InputRow};
pub use idx::load_idx;
pub use loader::{item_loader, Collect};
pub use regression::{load_csv_regression, load_series_forecast, Baseline, RowData};
pub use scaling::{FeatureScaling, RowScaling};
pub(crate) use split::{moments, shuffle_for_split};
pub use synthetic::generate;

use rand::seq::SliceRandom;

use crate::config::{DataConfig, DataSource};

/// One labelled sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Feature values.
    pub features: Vec<f32>,
    /// Class index in `0..classes`.
    pub label: usize,
}

/// A dataset ready to train on.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// Training samples.
    pub train: Vec<Sample>,
    /// Validation samples.
    pub valid: Vec<Sample>,
    /// Features per sample.
    pub features: usize,
    /// Number of classes.
    pub classes: usize,
}

/// Why a dataset could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DataError {
    /// A file could not be read.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        message: String,
    },
    /// A file's content is malformed.
    #[error("{path}:{line}: {message}")]
    Format {
        /// The file.
        path: String,
        /// One-based line number.
        line: usize,
        /// What is wrong, naming the column.
        message: String,
    },
    /// The data as a whole cannot be used (too few samples, one class, ...).
    #[error("{0}")]
    Unusable(String),
}

/// Loads the configured classification dataset and splits it with `seed`. Regression data
/// (a CSV target column, a series) loads through [`load_csv_regression`] and
/// [`load_series_forecast`].
pub fn load(config: &DataConfig, seed: u64) -> Result<Dataset, DataError> {
    let (samples, features, classes) = match &config.source {
        DataSource::Synthetic(s) => (generate(s), s.features, s.classes),
        DataSource::Csv(c) if c.target_column.is_none() => load_csv(c)?,
        DataSource::Idx(c) => load_idx(c)?,
        DataSource::Csv(_) | DataSource::Series(_) => {
            return Err(DataError::Unusable(
                "this data has values to predict, not classes: load it as rows".into(),
            ))
        }
    };
    let mut dataset = split(
        samples,
        features,
        classes,
        config.validation_fraction,
        seed,
        config.stratify(),
    )?;
    if config.standardize() {
        dataset.standardize();
    }
    Ok(dataset)
}

impl Dataset {
    /// Scales each feature to mean 0 and standard deviation 1, with the mean and standard
    /// deviation of the training split only (the validation split must not inform training),
    /// applied to both splits. A constant feature (standard deviation 0) is only centred.
    pub fn standardize(&mut self) {
        let scaling = FeatureScaling::fit(&self.train, self.features);
        for s in self.train.iter_mut().chain(self.valid.iter_mut()) {
            scaling.apply(&mut s.features);
        }
    }
}

/// Shuffles with `seed` and holds out `validation_fraction` of the samples (at least one, and
/// at least one left to train on).
///
/// With `stratify`, each class gives its own share of the held-out samples: a class of `n`
/// samples gives `n × fraction` of them, rounded so that the total is the same as without
/// stratification (largest remainders first), and keeps at least one for training where it
/// can. Both splits then keep the class balance of the whole set, which a plain shuffle only
/// does on average: on the shipped digits data with seed 42, a plain shuffle holds out 28 to
/// 46 samples of a class where 20% of each is 35 to 37.
pub fn split(
    mut samples: Vec<Sample>,
    features: usize,
    classes: usize,
    validation_fraction: f64,
    seed: u64,
    stratify: bool,
) -> Result<Dataset, DataError> {
    let n = samples.len();
    let (mut rng, n_valid) = shuffle_for_split(&mut samples, validation_fraction, seed)?;
    let (train, valid) = if stratify {
        let classes_seen = samples.iter().map(|s| s.label + 1).max().unwrap_or(0);
        let mut by_class: Vec<Vec<Sample>> = vec![Vec::new(); classes.max(classes_seen)];
        for sample in samples {
            by_class[sample.label].push(sample);
        }
        let counts: Vec<usize> = by_class.iter().map(Vec::len).collect();
        let quotas = class_quotas(&counts, n_valid);
        let (mut train, mut valid) = (Vec::with_capacity(n - n_valid), Vec::new());
        for (mut class, quota) in by_class.into_iter().zip(quotas) {
            valid.extend(class.drain(..quota));
            train.append(&mut class);
        }
        // Grouping by class sorted both splits; shuffle them again so that neither is
        // ordered by label.
        train.shuffle(&mut rng);
        valid.shuffle(&mut rng);
        (train, valid)
    } else {
        let valid = samples.split_off(n - n_valid);
        (samples, valid)
    };
    Ok(Dataset {
        train,
        valid,
        features,
        classes,
    })
}

/// How many samples of each class (`counts`) go to validation so that they add up to `total`
/// (less than the sum of `counts`): each class's exact share rounded down, then one more for
/// the classes with the largest remainders. A class is first kept from giving its last
/// sample; only if that cannot reach `total` may it.
fn class_quotas(counts: &[usize], total: usize) -> Vec<usize> {
    let n: usize = counts.iter().sum();
    let exact: Vec<f64> = counts
        .iter()
        .map(|&c| c as f64 * total as f64 / n as f64)
        .collect();
    let mut quotas: Vec<usize> = exact.iter().map(|e| e.floor() as usize).collect();
    let mut order: Vec<usize> = (0..counts.len()).collect();
    order.sort_by(|&a, &b| {
        let remainder = |c: usize| exact[c] - quotas[c] as f64;
        remainder(b).total_cmp(&remainder(a)).then(a.cmp(&b))
    });
    let mut left = total.saturating_sub(quotas.iter().sum());
    for keep_one in [true, false] {
        for &c in order.iter().cycle().take(order.len() * (left + 1)) {
            if left == 0 {
                return quotas;
            }
            if quotas[c] + usize::from(keep_one) < counts[c] {
                quotas[c] += 1;
                left -= 1;
            }
        }
    }
    quotas
}

#[cfg(test)]
mod tests;
