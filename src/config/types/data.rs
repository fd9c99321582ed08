//! `[data]`, read as it is: the keys every kind takes in [`DataConfig`], each kind's own in its
//! source's type ([`SyntheticConfig`], [`CsvConfig`], [`IdxConfig`], [`SeriesConfig`]), each
//! key's default beside its field. The reader (`validate/data.rs`) takes the kind from
//! `data.kind`, or from the keys given, hands that kind's keys to its type and the rest to
//! [`DataConfig`]; a key of another kind is refused, naming the kinds that take it. A source
//! with a file is built by [`ConfigBuilder`](crate::config::ConfigBuilder)'s setters (`csv`,
//! `idx`, `series`) or read from a file, never written as a literal: its type may grow a key
//! (`#[non_exhaustive]`) without breaking a program.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::serde_checks::{positive, positive_or_none};

/// `[data]`: the dataset and how it is split and loaded. A `[data]` table is read by the
/// config's reader ([`parse`](crate::config::parse), [`ConfigBuilder`](crate::config::ConfigBuilder)),
/// which hands this type's own `Deserialize` the keys every kind takes and the source's type
/// the kind's; read alone, a table of the kind's keys is refused as unknown keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DataConfig {
    /// Where samples come from: `data.kind` and its keys (read by the kind's own type).
    #[serde(flatten, skip_deserializing)]
    pub source: DataSource,
    /// Fraction of samples held out for validation, in `(0, 1)`.
    pub validation_fraction: f64,
    /// Hold out the same fraction of every class, so both splits keep the class balance
    /// (default: on for a CSV of labels and IDX files, off for synthetic data and for values
    /// to predict; see [`stratify`](Self::stratify)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stratify: Option<bool>,
    /// Scale each feature to mean 0, standard deviation 1, with the training split's
    /// statistics (default: on for files, off for synthetic data; see
    /// [`standardize`](Self::standardize)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub standardize: Option<bool>,
    /// Data-loader worker threads; 0 loads on the training thread and keeps batch order, and so
    /// the run, reproducible.
    pub num_workers: usize,
}

impl Default for DataConfig {
    fn default() -> Self {
        DataConfig {
            source: DataSource::default(),
            validation_fraction: 0.2,
            stratify: None,
            standardize: None,
            num_workers: 0,
        }
    }
}

impl DataConfig {
    /// Whether samples come from a file: files get the treatment real data needs, while
    /// synthetic data is generated centred, scaled and balanced, and keeps its plain seeded
    /// split so that the benchmark workloads stay comparable from version to version.
    fn is_from_a_file(&self) -> bool {
        !matches!(self.source, DataSource::Synthetic(_))
    }

    /// Whether the samples have classes to stratify (values to predict have none).
    pub fn has_classes(&self) -> bool {
        match &self.source {
            DataSource::Csv(c) => c.target_column.is_none(),
            DataSource::Series(_) => false,
            DataSource::Synthetic(_) | DataSource::Idx(_) => true,
        }
    }

    /// `data.stratify`, or its default by the source: on for files with classes.
    pub fn stratify(&self) -> bool {
        self.stratify
            .unwrap_or(self.is_from_a_file() && self.has_classes())
    }

    /// `data.standardize`, or its default by the source: on for files.
    pub fn standardize(&self) -> bool {
        self.standardize.unwrap_or(self.is_from_a_file())
    }
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

impl Default for DataSource {
    fn default() -> Self {
        DataSource::Synthetic(SyntheticConfig::default())
    }
}

/// A time series: one value column of a CSV file, in row order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SeriesConfig {
    /// The file.
    pub path: PathBuf,
    /// The value column (default: the last).
    #[serde(default = "Column::last")]
    pub column: Column,
    /// Whether the first row is a header; `None` detects it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<bool>,
    /// Past values each forecast sees.
    #[serde(deserialize_with = "positive")]
    pub window: usize,
    /// Values forecast at once (default 1: the next one).
    #[serde(default = "one", deserialize_with = "positive")]
    pub horizon: usize,
    /// Values at the end of the series held out for validation; `None`: `validation_fraction`
    /// of them.
    #[serde(
        default,
        deserialize_with = "positive_or_none",
        skip_serializing_if = "Option::is_none"
    )]
    pub holdout: Option<usize>,
    /// What to do about missing values (default: interpolate).
    #[serde(default)]
    pub gaps: GapPolicy,
    /// The season of the seasonal-naive baseline, in steps (52 for weekly data with a yearly
    /// cycle; the default, 1, is the naive "same as last" forecast).
    #[serde(default = "one", deserialize_with = "positive")]
    pub season: usize,
}

fn one() -> usize {
    1
}

/// What to do about missing values in a series (empty fields, `nan`, `na`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GapPolicy {
    /// Refuse the file: the error names the first missing value's line and the count.
    None,
    /// Fill each gap linearly between its present neighbours (a leading or trailing gap takes
    /// the nearest value). The series is filled as a whole, so a gap just before the holdout is
    /// drawn toward the first held-out value; `Previous` never looks ahead.
    #[default]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SyntheticConfig {
    /// Number of samples (default 8192).
    #[serde(deserialize_with = "positive")]
    pub samples: usize,
    /// Features per sample (default 64).
    #[serde(deserialize_with = "positive")]
    pub features: usize,
    /// Number of classes, at least 2 (default 10).
    #[serde(deserialize_with = "positive")]
    pub classes: usize,
    /// Generator seed, independent of the run seed (default 7).
    pub seed: u64,
    /// Standard deviation of the noise around each class centre (centres have unit scale;
    /// default 1).
    pub noise: f64,
}

impl Default for SyntheticConfig {
    fn default() -> Self {
        SyntheticConfig {
            samples: 8192,
            features: 64,
            classes: 10,
            seed: 7,
            noise: 1.0,
        }
    }
}

/// A CSV dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct CsvConfig {
    /// The file.
    pub path: PathBuf,
    /// The label column (classification; default: the last); `None` with a `target_column`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_column: Option<Column>,
    /// The target column (regression, instead of a label); `None` for classification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_column: Option<Column>,
    /// Whether the first row is a header; `None` detects it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<bool>,
}

/// An IDX dataset: an images file (`[n, ...]`, unsigned bytes or floats) and a labels file
/// (`[n]`, unsigned bytes), as MNIST and Fashion-MNIST ship them (`.gz` is decompressed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct IdxConfig {
    /// The images file.
    pub images: PathBuf,
    /// The labels file.
    pub labels: PathBuf,
}

/// A column named by header or by index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "expected a column's index (an integer, -1 the last) or its header (a string)"
)]
pub enum Column {
    /// Zero-based index; negative counts from the end.
    Index(i64),
    /// Header name.
    Name(String),
}

impl Column {
    /// The last column (`-1`).
    pub fn last() -> Column {
        Column::Index(-1)
    }
}
