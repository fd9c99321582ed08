//! The configuration as a TOML file has it, before the checks beyond types: the tables read as
//! they are (their own types, shared with [`RunConfig`](super::RunConfig)), and the two still
//! written their own way here, `[model]` (a kind's name and its keys) and `[data]` (its kind
//! told from the keys given). [`RunConfig`](super::RunConfig) is built from it once, by
//! [`TryFrom`], and everything downstream sees only the validated form.

use serde::{Deserialize, Serialize};

use super::types::{CheckpointConfig, DeviceConfig, MemoryConfig, RunSection, TrainConfig};

pub use super::size::RawSize;

/// A whole configuration file, before validation.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawConfig {
    /// `[run]`: name, seed and output directory, read as it is ([`RunSection`]).
    #[serde(default)]
    pub run: RunSection,
    /// `[device]`: which backend and device index, read as it is ([`DeviceConfig`]).
    #[serde(default)]
    pub device: DeviceConfig,
    /// `[model]`: the network.
    #[serde(default)]
    pub model: RawModel,
    /// `[data]`: where the samples come from.
    #[serde(default)]
    pub data: RawData,
    /// `[train]`: the optimisation loop, read as it is ([`TrainConfig`]).
    #[serde(default)]
    pub train: TrainConfig,
    /// `[memory]`: memory policy and snapshots, read as it is ([`MemoryConfig`]).
    #[serde(default)]
    pub memory: MemoryConfig,
    /// `[checkpoint]`: when checkpoints are written, read as it is ([`CheckpointConfig`]).
    #[serde(default)]
    pub checkpoint: CheckpointConfig,
    /// `[sweep]`: what `tidemark sweep` searches over; validated into a
    /// [`crate::sweep::Space`], not part of a run's config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<RawSweep>,
}

/// `[sweep]` as written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawSweep {
    /// `grid`, `random` or `tpe`.
    pub method: Option<String>,
    /// Trials drawn (random, TPE).
    pub trials: Option<i64>,
    /// The random draws' seed.
    pub seed: Option<i64>,
    /// The metric trials are ranked by.
    pub monitor: Option<String>,
    /// `min` or `max`.
    pub mode: Option<String>,
    /// `largest_first` or `listed`.
    pub order: Option<String>,
    /// Trials at once.
    pub parallel: Option<i64>,
    /// What the running trials may hold together: a size or a fraction.
    pub budget: Option<RawSize>,
    /// `[sweep.vary]`: the keys varied (dotted, or nested tables), each a list or a range.
    pub vary: Option<toml::Table>,
    /// `[sweep.prune]`: the pruner.
    pub prune: Option<RawPrune>,
    /// `[sweep.pbt]`: population based training's settings (`method = "pbt"`).
    pub pbt: Option<SweepPbt>,
    /// A shared study's heartbeat, in seconds.
    pub heartbeat: Option<toml::Value>,
    /// A shared study's grace period before a silent trial is taken over, in seconds.
    pub grace: Option<toml::Value>,
}

/// `[sweep.prune]` as written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawPrune {
    /// `asha`, `median` or `none`.
    pub method: Option<String>,
    /// ASHA's first rung; the median rule's first epoch that may prune.
    pub min_epochs: Option<i64>,
    /// ASHA's η.
    pub reduction: Option<i64>,
    /// The median rule's completed trials before it prunes.
    pub startup: Option<i64>,
}

/// `[sweep.pbt]`, read as it is: population based training's settings, each default beside
/// it (Ray Tune's `PopulationBasedTraining`'s, but for the interval, which Ray counts in
/// training iterations); the checks beyond their types are the search's.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub struct SweepPbt {
    /// Members trained at once, drawn from `[sweep.vary]` as random trials are (default 8).
    #[serde(deserialize_with = "super::positive")]
    pub population: usize,
    /// Epochs between two decisions (default 1).
    #[serde(deserialize_with = "super::positive")]
    pub interval: usize,
    /// The share of the population at each end: the bottom copies the top (default 0.25).
    pub quantile: f64,
    /// The probability that a copied setting is drawn again instead of perturbed (0.25).
    pub resample: f64,
    /// What a copied range's value is multiplied by, one drawn per key (1.2 or 0.8).
    pub factors: Vec<f64>,
}

impl Default for SweepPbt {
    fn default() -> Self {
        SweepPbt {
            population: 8,
            interval: 1,
            quantile: 0.25,
            resample: 0.25,
            factors: vec![1.2, 0.8],
        }
    }
}

/// `[model]` as written: the kind's name, and its keys, which the kind reads.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(expecting = "a table")]
pub struct RawModel {
    /// Model kind: `mlp` by default, `cnn`, `lstm`, or a program's own.
    pub kind: Option<String>,
    /// The kind's keys, `kind` aside.
    #[serde(flatten)]
    pub settings: toml::Table,
}

/// A label column named by header or by zero-based index.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum RawColumn {
    /// Zero-based index; negative counts from the end (`-1` is the last column).
    Index(i64),
    /// Header name.
    Name(String),
}

/// `[data]` as written. Keys for one `kind` are rejected with the other.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawData {
    /// `synthetic`, `csv`, `idx` or `series`.
    pub kind: Option<String>,
    /// Synthetic: number of samples.
    pub samples: Option<i64>,
    /// Synthetic: number of features.
    pub features: Option<i64>,
    /// Synthetic: number of classes.
    pub classes: Option<i64>,
    /// Synthetic: generator seed.
    pub seed: Option<i64>,
    /// Synthetic: standard deviation of the noise around each class centre.
    pub noise: Option<f64>,
    /// CSV: file path, relative to the working directory.
    pub path: Option<String>,
    /// CSV: the label column (classification).
    pub label_column: Option<RawColumn>,
    /// CSV: the target column (regression, instead of a label).
    pub target_column: Option<RawColumn>,
    /// Series: the value column (default: the last).
    pub column: Option<RawColumn>,
    /// Series: past values each forecast sees.
    pub window: Option<i64>,
    /// Series: values forecast at once (default 1).
    pub horizon: Option<i64>,
    /// Series: values at the end held out for validation (default: `validation_fraction` of
    /// them).
    pub holdout: Option<i64>,
    /// Series: `none` (missing values are an error), `interpolate`, `previous` or `skip`.
    pub gaps: Option<String>,
    /// Series: the season of the seasonal-naive baseline, in steps.
    pub season: Option<i64>,
    /// CSV: whether the first row is a header (detected when absent).
    pub header: Option<bool>,
    /// IDX: the images file (MNIST format; `.gz` is decompressed).
    pub images: Option<String>,
    /// IDX: the labels file.
    pub labels: Option<String>,
    /// Fraction of samples held out for validation.
    pub validation_fraction: Option<f64>,
    /// Hold out the same fraction of every class (default: on for CSV and IDX files, off for
    /// synthetic data).
    pub stratify: Option<bool>,
    /// Scale each feature to mean 0 and standard deviation 1, with statistics from the
    /// training split (default: on for CSV, off for synthetic data).
    pub standardize: Option<bool>,
    /// Data-loader worker threads; 0 (the default) loads on the training thread and keeps
    /// batch order, and so the run, reproducible.
    pub num_workers: Option<i64>,
}
