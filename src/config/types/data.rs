//! `[data]`.

use std::path::PathBuf;

use serde::Serialize;

/// `[data]`: the dataset and how it is split and loaded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataConfig {
    /// Where samples come from.
    #[serde(flatten)]
    pub source: DataSource,
    /// Fraction of samples held out for validation, in `(0, 1)`.
    pub validation_fraction: f64,
    /// Hold out the same fraction of every class, so both splits keep the class balance.
    pub stratify: bool,
    /// Scale each feature to mean 0, standard deviation 1, with the training split's statistics.
    pub standardize: bool,
    /// Data-loader worker threads (0 loads on the training thread).
    pub num_workers: usize,
}

/// Where samples come from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum DataSource {
    /// Gaussian clusters around random class centres: learnable, and needs no file.
    Synthetic(SyntheticConfig),
    /// A CSV file of numeric feature columns and one integer label column.
    Csv(CsvConfig),
    /// MNIST-format (IDX) image and label files.
    Idx(IdxConfig),
    /// One column of a CSV file as a time series, forecast from windows of its past.
    Series(SeriesConfig),
}

/// A time series: one value column of a CSV file, in row order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesConfig {
    /// The file.
    pub path: PathBuf,
    /// The value column.
    pub column: Column,
    /// Whether the first row is a header; `None` detects it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header: Option<bool>,
    /// Past values each forecast sees.
    pub window: usize,
    /// Values forecast at once (1: the next one).
    pub horizon: usize,
    /// Values at the end of the series held out for validation; `None`: `validation_fraction`
    /// of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holdout: Option<usize>,
    /// What to do about missing values.
    pub gaps: GapPolicy,
    /// The season of the seasonal-naive baseline, in steps (52 for weekly data with a yearly
    /// cycle; 1 is the naive "same as last" forecast).
    pub season: usize,
}

/// What to do about missing values in a series (empty fields, `nan`, `na`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GapPolicy {
    /// Refuse the file: the error names the first missing value's line and the count.
    None,
    /// Fill each gap linearly between its present neighbours (a leading or trailing gap takes
    /// the nearest value). The series is filled as a whole, so a gap just before the holdout is
    /// drawn toward the first held-out value; `Previous` never looks ahead.
    Interpolate,
    /// Fill each gap with the last present value (a leading gap takes the first one).
    Previous,
    /// Keep the gaps; drop every window that touches one.
    Skip,
}

impl GapPolicy {
    /// The name used in configs.
    pub fn name(self) -> &'static str {
        match self {
            GapPolicy::None => "none",
            GapPolicy::Interpolate => "interpolate",
            GapPolicy::Previous => "previous",
            GapPolicy::Skip => "skip",
        }
    }
}

/// Synthetic classification data.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyntheticConfig {
    /// Number of samples.
    pub samples: usize,
    /// Features per sample.
    pub features: usize,
    /// Number of classes.
    pub classes: usize,
    /// Generator seed, independent of the run seed.
    pub seed: u64,
    /// Standard deviation of the noise around each class centre (centres have unit scale).
    pub noise: f64,
}

/// A CSV dataset.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CsvConfig {
    /// The file.
    pub path: PathBuf,
    /// The label column (classification); `None` with a `target_column`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_column: Option<Column>,
    /// The target column (regression); `None` for classification.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_column: Option<Column>,
    /// Whether the first row is a header; `None` detects it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header: Option<bool>,
}

/// An IDX dataset: an images file (`[n, ...]`, unsigned bytes or floats) and a labels file
/// (`[n]`, unsigned bytes), as MNIST and Fashion-MNIST ship them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IdxConfig {
    /// The images file.
    pub images: PathBuf,
    /// The labels file.
    pub labels: PathBuf,
}

/// A column named by header or by index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Column {
    /// Zero-based index; negative counts from the end.
    Index(i64),
    /// Header name.
    Name(String),
}
