//! Datasets and batching: synthetic classification, CSV files (a class label or a value to
//! predict), MNIST-format (IDX) files and time series, split into training and validation sets,
//! and turned into tensors by Burn [`Batcher`](burn::data::dataloader::batcher::Batcher)s.

mod batcher;
mod csv;
mod csv_error;
mod idx;
mod loader;
mod rows;
mod scaling;
pub mod series;
mod split;
mod synthetic;

pub use batcher::{ClassificationBatch, ClassificationBatcher, Row, RowBatch, RowBatcher};
pub use csv::{load_csv, load_csv_inputs, load_csv_rows, InputRow};
pub use idx::load_idx;
pub use loader::{item_loader, Collect};
pub use rows::{load_csv_regression, load_series_forecast, Baseline, RowData};
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
        config.stratify,
    )?;
    if config.standardize {
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
mod tests {
    use super::*;

    fn samples(n: usize) -> Vec<Sample> {
        (0..n)
            .map(|i| Sample {
                features: vec![i as f32],
                label: i % 2,
            })
            .collect()
    }

    #[test]
    fn split_is_seeded_and_disjoint() {
        for stratify in [false, true] {
            let a = split(samples(100), 1, 2, 0.2, 3, stratify).unwrap();
            let b = split(samples(100), 1, 2, 0.2, 3, stratify).unwrap();
            assert_eq!((a.train.len(), a.valid.len()), (80, 20));
            assert_eq!(a.valid, b.valid);
            assert_ne!(
                a.valid,
                split(samples(100), 1, 2, 0.2, 4, stratify).unwrap().valid
            );
            let mut all: Vec<i64> = a
                .train
                .iter()
                .chain(&a.valid)
                .map(|s| s.features[0] as i64)
                .collect();
            all.sort();
            assert_eq!(all, (0..100).collect::<Vec<_>>());
        }
    }

    /// Samples whose label is the class given by `counts`, feature = index.
    fn classes(counts: &[usize]) -> Vec<Sample> {
        counts
            .iter()
            .enumerate()
            .flat_map(|(label, &n)| std::iter::repeat_n(label, n))
            .enumerate()
            .map(|(i, label)| Sample {
                features: vec![i as f32],
                label,
            })
            .collect()
    }

    fn per_class(samples: &[Sample], classes: usize) -> Vec<usize> {
        let mut counts = vec![0; classes];
        for s in samples {
            counts[s.label] += 1;
        }
        counts
    }

    #[test]
    fn stratified_split_keeps_every_class_share() {
        // 90/10 imbalance, 20% held out: 18 and 2, whatever the seed.
        for seed in 0..20 {
            let d = split(classes(&[90, 10]), 1, 2, 0.2, seed, true).unwrap();
            assert_eq!(per_class(&d.valid, 2), vec![18, 2], "seed {seed}");
            assert_eq!(per_class(&d.train, 2), vec![72, 8], "seed {seed}");
        }
        // A plain shuffle gets the rare class's share wrong for some seed.
        assert!((0..20).any(|seed| {
            let d = split(classes(&[90, 10]), 1, 2, 0.2, seed, false).unwrap();
            per_class(&d.valid, 2) != vec![18, 2]
        }));
    }

    #[test]
    fn shipped_digits_split_holds_out_a_fifth_of_every_class() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/digits-mlp.toml");
        let config = crate::config::load(std::path::Path::new(path), &[]).unwrap();
        let mut data = config.data.clone();
        data.standardize = false;
        let d = load(&data, 42).unwrap();
        let (valid, train) = (per_class(&d.valid, 10), per_class(&d.train, 10));
        for class in 0..10 {
            let share = (valid[class] + train[class]) as f64 * 0.2;
            assert!(
                (valid[class] as f64 - share).abs() < 1.0,
                "class {class}: {} held out of {}",
                valid[class],
                valid[class] + train[class]
            );
        }
        assert_eq!(d.valid.len(), 359);
        // The plain seeded shuffle, for comparison (shown with `-- --nocapture`).
        data.stratify = false;
        let plain = per_class(&load(&data, 42).unwrap().valid, 10);
        let range = |v: &[usize]| (*v.iter().min().unwrap(), *v.iter().max().unwrap());
        eprintln!(
            "held out per class: stratified {:?}, plain shuffle {:?}",
            range(&valid),
            range(&plain)
        );
        assert!(range(&plain).1 - range(&plain).0 > 2, "{plain:?}");
    }

    #[test]
    fn stratified_split_rounds_to_the_plain_total() {
        // Shares 3.3, 3.3 and 3.3 of 10 held out: floors 3 + 3 + 3, one more for the first
        // largest remainder; the total matches round(33 × 0.3) = 10.
        let d = split(classes(&[11, 11, 11]), 1, 3, 0.3, 7, true).unwrap();
        assert_eq!(d.valid.len(), 10);
        let counts = per_class(&d.valid, 3);
        assert!(counts.iter().all(|&c| c == 3 || c == 4), "{counts:?}");
        // Neither split is left sorted by label.
        let labels: Vec<usize> = d.train.iter().map(|s| s.label).collect();
        assert!(labels.windows(2).any(|w| w[0] > w[1]), "{labels:?}");
    }

    #[test]
    fn stratified_split_leaves_a_rare_class_its_only_sample() {
        // 5 of 9 held out: shares 2.2, 2.2 and 0.6. Class 2 has the largest remainder, but
        // its one sample stays in training, and class 0 gives one more instead.
        assert_eq!(class_quotas(&[4, 4, 1], 5), vec![3, 2, 0]);
        let d = split(classes(&[4, 4, 1]), 1, 3, 0.55, 1, true).unwrap();
        assert_eq!(per_class(&d.valid, 3), vec![3, 2, 0]);
        assert_eq!(per_class(&d.train, 3), vec![1, 2, 1]);
        // Only when nothing else can give may a class give its last sample.
        assert_eq!(class_quotas(&[1, 1], 1), vec![1, 0]);
    }

    #[test]
    fn standardizing_uses_the_training_split_only() {
        let mut d = Dataset {
            train: vec![
                Sample {
                    features: vec![1.0, 5.0],
                    label: 0,
                },
                Sample {
                    features: vec![3.0, 5.0],
                    label: 1,
                },
            ],
            valid: vec![Sample {
                features: vec![100.0, 7.0],
                label: 0,
            }],
            features: 2,
            classes: 2,
        };
        d.standardize();
        // Training mean (2, 5), standard deviation (1, 0): the validation sample does not
        // move them, and the constant feature is only centred.
        assert_eq!(d.train[0].features, vec![-1.0, 0.0]);
        assert_eq!(d.train[1].features, vec![1.0, 0.0]);
        assert_eq!(d.valid[0].features, vec![98.0, 2.0]);
    }

    #[test]
    fn split_keeps_one_sample_on_each_side() {
        let d = split(samples(3), 1, 2, 0.01, 0, true).unwrap();
        assert_eq!((d.train.len(), d.valid.len()), (2, 1));
        assert!(split(samples(1), 1, 2, 0.5, 0, true).is_err());
    }
}
