//! Datasets and batching: synthetic classification, CSV files and MNIST-format (IDX) files, split into training and
//! validation sets, and turned into tensors by a Burn [`Batcher`](burn::data::dataloader::batcher::Batcher).

mod batcher;
mod csv;
mod idx;
mod synthetic;

pub use batcher::{ClassificationBatch, ClassificationBatcher};
pub use csv::load_csv;
pub use idx::load_idx;
pub use synthetic::generate;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

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

/// Loads the configured dataset and splits it with `seed`.
pub fn load(config: &DataConfig, seed: u64) -> Result<Dataset, DataError> {
    let (samples, features, classes) = match &config.source {
        DataSource::Synthetic(s) => (generate(s), s.features, s.classes),
        DataSource::Csv(c) => load_csv(c)?,
        DataSource::Idx(c) => load_idx(c)?,
    };
    let mut dataset = split(samples, features, classes, config.validation_fraction, seed)?;
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
        let n = self.train.len() as f64;
        let mut mean = vec![0.0f64; self.features];
        for s in &self.train {
            for (m, &x) in mean.iter_mut().zip(&s.features) {
                *m += f64::from(x) / n;
            }
        }
        let mut var = vec![0.0f64; self.features];
        for s in &self.train {
            for ((v, &x), m) in var.iter_mut().zip(&s.features).zip(&mean) {
                *v += (f64::from(x) - m).powi(2) / n;
            }
        }
        let scale: Vec<f64> = var
            .iter()
            .map(|v| if *v > 0.0 { 1.0 / v.sqrt() } else { 1.0 })
            .collect();
        for s in self.train.iter_mut().chain(self.valid.iter_mut()) {
            for ((x, m), k) in s.features.iter_mut().zip(&mean).zip(&scale) {
                *x = ((f64::from(*x) - m) * k) as f32;
            }
        }
    }
}

/// Shuffles with `seed` and holds out `validation_fraction` of the samples (at least one).
pub fn split(
    mut samples: Vec<Sample>,
    features: usize,
    classes: usize,
    validation_fraction: f64,
    seed: u64,
) -> Result<Dataset, DataError> {
    if samples.len() < 2 {
        return Err(DataError::Unusable(format!(
            "need at least 2 samples to split into training and validation, got {}",
            samples.len()
        )));
    }
    samples.shuffle(&mut StdRng::seed_from_u64(seed));
    let n_valid =
        ((samples.len() as f64 * validation_fraction).round() as usize).clamp(1, samples.len() - 1);
    let valid = samples.split_off(samples.len() - n_valid);
    Ok(Dataset {
        train: samples,
        valid,
        features,
        classes,
    })
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
        let a = split(samples(100), 1, 2, 0.2, 3).unwrap();
        let b = split(samples(100), 1, 2, 0.2, 3).unwrap();
        assert_eq!((a.train.len(), a.valid.len()), (80, 20));
        assert_eq!(a.valid, b.valid);
        let mut all: Vec<i64> = a
            .train
            .iter()
            .chain(&a.valid)
            .map(|s| s.features[0] as i64)
            .collect();
        all.sort();
        assert_eq!(all, (0..100).collect::<Vec<_>>());
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
        let d = split(samples(3), 1, 2, 0.01, 0).unwrap();
        assert_eq!((d.train.len(), d.valid.len()), (2, 1));
        assert!(split(samples(1), 1, 2, 0.5, 0).is_err());
    }
}
