//! The `[data]` setters: the source of each kind, then the keys every kind takes.

use std::path::Path;

use super::ConfigBuilder;
use crate::config::raw::RawColumn;
use crate::config::types::{Column, GapPolicy};

impl ConfigBuilder {
    /// Synthetic classification data (`data.kind = "synthetic"`, `data.samples`,
    /// `data.features`, `data.classes`).
    pub fn synthetic(mut self, samples: usize, features: usize, classes: usize) -> Self {
        self.raw.data.kind = Some("synthetic".into());
        self.raw.data.samples = Some(samples as i64);
        self.raw.data.features = Some(features as i64);
        self.raw.data.classes = Some(classes as i64);
        self
    }

    /// The synthetic data's generator seed, independent of the run's (`data.seed`).
    pub fn data_seed(mut self, seed: u64) -> Self {
        self.raw.data.seed = Some(seed as i64);
        self
    }

    /// The standard deviation of the synthetic noise around each class centre (`data.noise`).
    pub fn noise(mut self, std: f64) -> Self {
        self.raw.data.noise = Some(std);
        self
    }

    /// A CSV file whose last column is the label (`data.kind = "csv"`, `data.path`); see
    /// [`label_column`](Self::label_column), [`target_column`](Self::target_column) and
    /// [`header`](Self::header).
    pub fn csv(mut self, path: impl AsRef<Path>) -> Self {
        self.raw.data.kind = Some("csv".into());
        self.raw.data.path = self.path_text("data.path", path.as_ref());
        self
    }

    /// The CSV's label column, for classification (`data.label_column`).
    pub fn label_column(mut self, column: Column) -> Self {
        self.raw.data.label_column = Some(raw_column(column));
        self
    }

    /// The CSV's target column, for regression instead of a label (`data.target_column`).
    pub fn target_column(mut self, column: Column) -> Self {
        self.raw.data.target_column = Some(raw_column(column));
        self
    }

    /// Whether the CSV's or series' first row is a header; detected when unset
    /// (`data.header`).
    pub fn header(mut self, header: bool) -> Self {
        self.raw.data.header = Some(header);
        self
    }

    /// MNIST-format images and labels files (`data.kind = "idx"`, `data.images`,
    /// `data.labels`).
    pub fn idx(mut self, images: impl AsRef<Path>, labels: impl AsRef<Path>) -> Self {
        self.raw.data.kind = Some("idx".into());
        self.raw.data.images = self.path_text("data.images", images.as_ref());
        self.raw.data.labels = self.path_text("data.labels", labels.as_ref());
        self
    }

    /// A series from a CSV file's last column, each forecast seeing `window` past values
    /// (`data.kind = "series"`, `data.path`, `data.window`).
    pub fn series(mut self, path: impl AsRef<Path>, window: usize) -> Self {
        self.raw.data.kind = Some("series".into());
        self.raw.data.path = self.path_text("data.path", path.as_ref());
        self.raw.data.window = Some(window as i64);
        self
    }

    /// The series' value column (`data.column`).
    pub fn column(mut self, column: Column) -> Self {
        self.raw.data.column = Some(raw_column(column));
        self
    }

    /// Values of the series forecast at once (`data.horizon`).
    pub fn horizon(mut self, steps: usize) -> Self {
        self.raw.data.horizon = Some(steps as i64);
        self
    }

    /// Values at the series' end held out for validation (`data.holdout`).
    pub fn holdout(mut self, steps: usize) -> Self {
        self.raw.data.holdout = Some(steps as i64);
        self
    }

    /// What to do about missing values in the series (`data.gaps`).
    pub fn gaps(mut self, gaps: GapPolicy) -> Self {
        self.raw.data.gaps = Some(gaps.name().into());
        self
    }

    /// The season of the series' seasonal-naive baseline, in steps (`data.season`).
    pub fn season(mut self, steps: usize) -> Self {
        self.raw.data.season = Some(steps as i64);
        self
    }

    /// Fraction of samples held out for validation, in `(0, 1)`
    /// (`data.validation_fraction`).
    pub fn validation_fraction(mut self, fraction: f64) -> Self {
        self.raw.data.validation_fraction = Some(fraction);
        self
    }

    /// Hold out the same fraction of every class (`data.stratify`).
    pub fn stratify(mut self, on: bool) -> Self {
        self.raw.data.stratify = Some(on);
        self
    }

    /// Scale each feature to mean 0 and standard deviation 1 (`data.standardize`).
    pub fn standardize(mut self, on: bool) -> Self {
        self.raw.data.standardize = Some(on);
        self
    }

    /// Data-loader worker threads (`data.num_workers`).
    pub fn num_workers(mut self, workers: usize) -> Self {
        self.raw.data.num_workers = Some(workers as i64);
        self
    }
}

fn raw_column(column: Column) -> RawColumn {
    match column {
        Column::Index(i) => RawColumn::Index(i),
        Column::Name(n) => RawColumn::Name(n),
    }
}
