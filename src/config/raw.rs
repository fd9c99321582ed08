//! The configuration as a TOML file has it, before the checks beyond types: the tables read as
//! they are (their own types, shared with [`RunConfig`](super::RunConfig)), and the two whose
//! keys depend on their kind, kept as written: `[model]` (a kind's name and its keys, which the
//! kind reads) and `[data]` (its kind told from the keys given, read by
//! [`DataConfig`](super::DataConfig)'s reader). [`RunConfig`](super::RunConfig) is built from
//! it once, by [`TryFrom`], and everything downstream sees only the validated form.

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
    /// `[data]`: where the samples come from, as written; its reader takes the kind from
    /// `data.kind` or the keys given, and that kind's keys into its own type
    /// ([`DataConfig`](super::DataConfig)).
    #[serde(default)]
    pub data: toml::Table,
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
