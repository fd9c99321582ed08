//! A typed builder for library users. It fills a [`RawConfig`] and validates it through the
//! same [`TryFrom`] the CLI uses, so code and files obey identical rules.

use super::load::ConfigError;
use super::raw::RawConfig;
use super::raw::RawSize;
use super::size::MemorySize;
use super::types::{Backend, ClearPolicy, OnLimit, OptimizerKind, Precision, RunConfig};

/// Builds a [`RunConfig`] in code.
///
/// ```
/// let config = tidemark::config::ConfigBuilder::new("demo")
///     .synthetic(512, 16, 4)
///     .hidden(&[32])
///     .epochs(2)
///     .batch_size(32)
///     .build()
///     .unwrap();
/// assert_eq!(config.train.effective_batch_size(), 32);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ConfigBuilder {
    raw: RawConfig,
}

impl ConfigBuilder {
    /// A builder for a run called `name`, with every other key at its default.
    pub fn new(name: impl Into<String>) -> Self {
        let mut raw = RawConfig::default();
        raw.run.name = Some(name.into());
        Self { raw }
    }

    /// Starts from an existing raw config (e.g. one read from a file).
    pub fn from_raw(raw: RawConfig) -> Self {
        Self { raw }
    }

    /// Starts from a validated config, to build a variant of it: the variant is validated
    /// again, as a file would be (a validated config is never edited in place).
    pub fn from_config(config: &RunConfig) -> Self {
        let raw = toml::from_str(&super::to_toml(config))
            .expect("a validated config reads back as a raw one");
        Self { raw }
    }

    /// The run's name (its directory's name).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.raw.run.name = Some(name.into());
        self
    }

    /// Data-loader worker threads (`data.num_workers`).
    pub fn num_workers(mut self, workers: usize) -> Self {
        self.raw.data.num_workers = Some(workers as i64);
        self
    }

    /// Seed for initialisation and shuffling.
    pub fn seed(mut self, seed: u64) -> Self {
        self.raw.run.seed = Some(seed as i64);
        self
    }

    /// Directory that will hold the run directory.
    pub fn output_dir(mut self, dir: impl AsRef<std::path::Path>) -> Self {
        self.raw.run.output_dir = Some(dir.as_ref().display().to_string());
        self
    }

    /// Backend and device index.
    pub fn device(mut self, backend: Backend, index: usize) -> Self {
        self.raw.device.backend = Some(backend.name().into());
        self.raw.device.index = Some(index as i64);
        self
    }

    /// Hidden layer widths of the MLP.
    pub fn hidden(mut self, widths: &[usize]) -> Self {
        self.raw.model.hidden = Some(widths.iter().map(|&w| w as i64).collect());
        self
    }

    /// Synthetic classification data.
    pub fn synthetic(mut self, samples: usize, features: usize, classes: usize) -> Self {
        self.raw.data.kind = Some("synthetic".into());
        self.raw.data.samples = Some(samples as i64);
        self.raw.data.features = Some(features as i64);
        self.raw.data.classes = Some(classes as i64);
        self
    }

    /// A CSV file whose last column is the label (see [`raw_mut`](Self::raw_mut) for
    /// `label_column` and `header`).
    pub fn csv(mut self, path: impl AsRef<std::path::Path>) -> Self {
        self.raw.data.kind = Some("csv".into());
        self.raw.data.path = Some(path.as_ref().display().to_string());
        self
    }

    /// Passes over the training split.
    pub fn epochs(mut self, epochs: usize) -> Self {
        self.raw.train.epochs = Some(epochs as i64);
        self
    }

    /// Samples per micro-batch.
    pub fn batch_size(mut self, batch_size: usize) -> Self {
        self.raw.train.batch_size = Some(batch_size as i64);
        self
    }

    /// Micro-batches per optimizer step.
    pub fn accumulation_steps(mut self, steps: usize) -> Self {
        self.raw.train.accumulation_steps = Some(steps as i64);
        self
    }

    /// Optimizer and learning rate.
    pub fn optimizer(mut self, kind: OptimizerKind, lr: f64) -> Self {
        self.raw.train.optimizer = Some(kind.name().into());
        self.raw.train.lr = Some(lr);
        self
    }

    /// Compute precision (`bf16` and `f16` keep f32 master weights; `f16` scales the loss).
    pub fn precision(mut self, precision: Precision) -> Self {
        self.raw.train.precision = Some(precision.name().into());
        self
    }

    /// A hard memory limit, and what a breach does (`memory.limit`, `memory.on_limit`).
    pub fn memory_limit(mut self, limit: MemorySize, on_limit: OnLimit) -> Self {
        self.raw.memory.limit = Some(raw_size(limit));
        self.raw.memory.on_limit = Some(
            match on_limit {
                OnLimit::Fail => "fail",
                OnLimit::Shrink => "shrink",
                OnLimit::Fit => "fit",
            }
            .into(),
        );
        self
    }

    /// No memory limit (`memory.limit` unset, `memory.on_limit = "fail"`).
    pub fn no_memory_limit(mut self) -> Self {
        self.raw.memory.limit = None;
        self.raw.memory.on_limit = None;
        self
    }

    /// Allocate on demand (`memory.policy = "growth"`).
    pub fn growth(mut self) -> Self {
        self.raw.memory.policy = Some("growth".into());
        self
    }

    /// Reserve `size` up front (`memory.policy = "preallocate"`).
    pub fn preallocate(mut self, size: MemorySize) -> Self {
        self.raw.memory.policy = Some("preallocate".into());
        self.raw.memory.preallocate = Some(raw_size(size));
        self
    }

    /// When memory is released and verified (`memory.clear`).
    pub fn clear(mut self, clear: ClearPolicy) -> Self {
        self.raw.memory.clear = Some(
            match clear {
                ClearPolicy::Never => "never",
                ClearPolicy::BetweenRuns => "between_runs",
                ClearPolicy::EveryEpoch => "every_epoch",
            }
            .into(),
        );
        self
    }

    /// Also write a checkpoint every `steps` optimizer steps inside an epoch.
    pub fn checkpoint_every_steps(mut self, steps: usize) -> Self {
        self.raw.checkpoint.every_steps = Some(steps as i64);
        self
    }

    /// Direct access to every key, for what the typed setters do not cover.
    pub fn raw_mut(&mut self) -> &mut RawConfig {
        &mut self.raw
    }

    /// Validates and returns the configuration.
    pub fn build(self) -> Result<RunConfig, ConfigError> {
        RunConfig::try_from(self.raw).map_err(|invalid| ConfigError {
            origin: "config".into(),
            key: Some(invalid.key),
            message: invalid.message,
        })
    }
}

fn raw_size(size: MemorySize) -> RawSize {
    match size {
        MemorySize::Bytes(bytes) => RawSize::Bytes(bytes.min(i64::MAX as u64) as i64),
        MemorySize::Fraction(share) => RawSize::Fraction(share),
    }
}
