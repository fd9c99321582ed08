//! The `[data]` setters: the source of each kind, then the keys every kind takes. Each writes
//! its key into the table as a file writes it, and `build` reads it as a file's is read.

use std::path::Path;

use super::ConfigBuilder;
use crate::config::types::{Column, GapPolicy};

impl ConfigBuilder {
    /// `data.<key>` set to `value`.
    fn set_data(&mut self, key: &str, value: impl Into<toml::Value>) {
        self.raw.data.insert(key.to_string(), value.into());
    }

    /// `data.<key>` set to a count; one past what a config file holds is kept to be refused by
    /// `build`, with the key named.
    fn data_count(&mut self, key: &str, value: u64) {
        let dotted = format!("data.{key}");
        match crate::config::validate::in_a_file(&dotted, value) {
            Ok(()) => {
                self.usable(&dotted);
                self.set_data(key, value as i64);
            }
            Err(invalid) => self.unusable(crate::config::ConfigError {
                origin: "config".into(),
                key: Some(invalid.key),
                message: invalid.message,
            }),
        }
    }

    /// `data.<key>` set to a path, as [`path_text`](Self::path_text) takes it.
    fn data_path(&mut self, key: &str, path: &Path) {
        if let Some(text) = self.path_text(&format!("data.{key}"), path) {
            self.set_data(key, text);
        }
    }

    /// Synthetic classification data (`data.kind = "synthetic"`, `data.samples`,
    /// `data.features`, `data.classes`).
    pub fn synthetic(mut self, samples: usize, features: usize, classes: usize) -> Self {
        self.set_data("kind", "synthetic");
        self.data_count("samples", samples as u64);
        self.data_count("features", features as u64);
        self.data_count("classes", classes as u64);
        self
    }

    /// The synthetic data's generator seed, independent of the run's (`data.seed`).
    pub fn data_seed(mut self, seed: u64) -> Self {
        self.data_count("seed", seed);
        self
    }

    /// The standard deviation of the synthetic noise around each class centre (`data.noise`).
    pub fn noise(mut self, std: f64) -> Self {
        self.set_data("noise", std);
        self
    }

    /// A CSV file whose last column is the label (`data.kind = "csv"`, `data.path`); see
    /// [`label_column`](Self::label_column), [`target_column`](Self::target_column) and
    /// [`header`](Self::header).
    pub fn csv(mut self, path: impl AsRef<Path>) -> Self {
        self.set_data("kind", "csv");
        self.data_path("path", path.as_ref());
        self
    }

    /// The CSV's label column, for classification (`data.label_column`).
    pub fn label_column(mut self, column: Column) -> Self {
        self.set_data("label_column", column_value(column));
        self
    }

    /// The CSV's target column, for regression instead of a label (`data.target_column`).
    pub fn target_column(mut self, column: Column) -> Self {
        self.set_data("target_column", column_value(column));
        self
    }

    /// Whether the CSV's or series' first row is a header; detected when unset
    /// (`data.header`).
    pub fn header(mut self, header: bool) -> Self {
        self.set_data("header", header);
        self
    }

    /// MNIST-format images and labels files (`data.kind = "idx"`, `data.images`,
    /// `data.labels`).
    pub fn idx(mut self, images: impl AsRef<Path>, labels: impl AsRef<Path>) -> Self {
        self.set_data("kind", "idx");
        self.data_path("images", images.as_ref());
        self.data_path("labels", labels.as_ref());
        self
    }

    /// A series from a CSV file's last column, each forecast seeing `window` past values
    /// (`data.kind = "series"`, `data.path`, `data.window`).
    pub fn series(mut self, path: impl AsRef<Path>, window: usize) -> Self {
        self.set_data("kind", "series");
        self.data_path("path", path.as_ref());
        self.data_count("window", window as u64);
        self
    }

    /// The series' value column (`data.column`).
    pub fn column(mut self, column: Column) -> Self {
        self.set_data("column", column_value(column));
        self
    }

    /// Values of the series forecast at once (`data.horizon`).
    pub fn horizon(mut self, steps: usize) -> Self {
        self.data_count("horizon", steps as u64);
        self
    }

    /// Values at the series' end held out for validation (`data.holdout`).
    pub fn holdout(mut self, steps: usize) -> Self {
        self.data_count("holdout", steps as u64);
        self
    }

    /// What to do about missing values in the series (`data.gaps`).
    pub fn gaps(mut self, gaps: GapPolicy) -> Self {
        self.set_data("gaps", gaps.name());
        self
    }

    /// The season of the series' seasonal-naive baseline, in steps (`data.season`).
    pub fn season(mut self, steps: usize) -> Self {
        self.data_count("season", steps as u64);
        self
    }

    /// Fraction of samples held out for validation, in `(0, 1)`
    /// (`data.validation_fraction`).
    pub fn validation_fraction(mut self, fraction: f64) -> Self {
        self.set_data("validation_fraction", fraction);
        self
    }

    /// Hold out the same fraction of every class (`data.stratify`).
    pub fn stratify(mut self, on: bool) -> Self {
        self.set_data("stratify", on);
        self
    }

    /// Scale each feature to mean 0 and standard deviation 1 (`data.standardize`).
    pub fn standardize(mut self, on: bool) -> Self {
        self.set_data("standardize", on);
        self
    }

    /// Data-loader worker threads (`data.num_workers`).
    pub fn num_workers(mut self, workers: usize) -> Self {
        self.data_count("num_workers", workers as u64);
        self
    }
}

fn column_value(column: Column) -> toml::Value {
    match column {
        Column::Index(i) => toml::Value::Integer(i),
        Column::Name(n) => toml::Value::String(n),
    }
}
