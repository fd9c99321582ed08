//! A typed builder for library users. It fills a [`RawConfig`] and validates it through the
//! same [`TryFrom`] the CLI uses, so code and files obey identical rules. Every key a config
//! file takes has a setter; the `[data]` ones are in `data.rs`.

use super::error::ConfigError;
use super::raw::RawConfig;
use super::size::{DeviceBudget, MemorySize};
use super::types::{
    Backend, ClearPolicy, EarlyStoppingConfig, Execution, LossScaling, MemoryPolicyKind, Offload,
    OnLimit, OptimizerKind, Precision, RunConfig, ScheduleConfig, SnapshotEvery,
};

mod data;
mod outputs;

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
    /// A value given to a setter that a config cannot hold (a path not UTF-8, a count past
    /// TOML's integers): `build` refuses it.
    unusable: Option<ConfigError>,
}

impl ConfigBuilder {
    /// A builder for a run called `name`, with every other key at its default.
    pub fn new(name: impl Into<String>) -> Self {
        let mut raw = RawConfig::default();
        raw.run.name = name.into();
        Self::from_raw(raw)
    }

    /// Starts from an existing raw config (e.g. one read from a file).
    pub fn from_raw(raw: RawConfig) -> Self {
        Self {
            raw,
            unusable: None,
        }
    }

    /// Starts from a validated config, to build a variant of it: the variant is validated
    /// again, as a file would be (a validated config is never edited in place).
    pub fn from_config(config: &RunConfig) -> Self {
        let table = toml::from_str(&super::to_toml(config)).expect("a validated config is TOML");
        let raw = super::load::read(table).expect("a validated config reads back as a raw one");
        Self::from_raw(raw)
    }

    /// The run's name (its directory's name).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.raw.run.name = name.into();
        self
    }

    /// Seed for initialisation and shuffling.
    pub fn seed(mut self, seed: u64) -> Self {
        self.raw.run.seed = seed;
        self
    }

    /// Directory that will hold the run directory.
    pub fn output_dir(mut self, dir: impl AsRef<std::path::Path>) -> Self {
        if let Some(dir) = self.path_text("run.output_dir", dir.as_ref()) {
            self.raw.run.output_dir = dir.into();
        }
        self
    }

    /// Backend and device index.
    pub fn device(mut self, backend: Backend, index: usize) -> Self {
        self.raw.device.backend = backend;
        self.raw.device.index = index;
        self
    }

    /// How CubeCL backends run operations (`device.execution`); the build must have that mode.
    pub fn execution(mut self, execution: Execution) -> Self {
        self.raw.device.execution = Some(execution);
        self
    }

    /// The model's kind (`model.kind`): a built-in one (`mlp`, `cnn`, `lstm`, each with its
    /// own setters, as [`mlp`](Self::mlp)) or a program's own. Another kind than the one set
    /// drops the keys set for it.
    pub fn model(mut self, kind: &str) -> Self {
        let model = &mut self.raw.model;
        let current = model.kind.as_deref().unwrap_or(super::defaults::MODEL_KIND);
        if current != kind {
            model.settings.clear();
        }
        model.kind = Some(kind.to_string());
        self
    }

    /// One of the model kind's keys (`model.<key>`), as the kind reads it: checked by the
    /// kind when the run starts, or by [`Kinds::resolve`](crate::kinds::Kinds::resolve).
    pub fn model_key(mut self, key: &str, value: impl Into<toml::Value>) -> Self {
        self.raw
            .model
            .settings
            .insert(key.to_string(), value.into());
        self
    }

    /// Passes over the training split.
    pub fn epochs(mut self, epochs: usize) -> Self {
        self.raw.train.epochs = epochs;
        self
    }

    /// Samples per micro-batch.
    pub fn batch_size(mut self, batch_size: usize) -> Self {
        self.raw.train.batch_size = batch_size;
        self
    }

    /// Micro-batches per optimizer step.
    pub fn accumulation_steps(mut self, steps: usize) -> Self {
        self.raw.train.accumulation_steps = steps;
        self
    }

    /// Optimizer and learning rate.
    pub fn optimizer(mut self, kind: OptimizerKind, lr: f64) -> Self {
        self.raw.train.optimizer = kind;
        self.lr(lr)
    }

    /// The learning rate alone, keeping the optimizer (`train.lr`).
    pub fn lr(mut self, lr: f64) -> Self {
        self.raw.train.lr = lr;
        self.raw.train.find_lr = false;
        self
    }

    /// `train.lr = "find"`: the learning-rate finder runs on a copy of the run before it
    /// trains, and the run trains at the rate it suggests (docs/training.md, "Finding a
    /// learning rate").
    pub fn find_lr(mut self) -> Self {
        // The default rate until the finder's replaces it, as a file's `lr = "find"` reads.
        self.raw.train.lr = super::TrainConfig::default().lr;
        self.raw.train.find_lr = true;
        self
    }

    /// Compute precision (`bf16` and `f16` keep f32 master weights; `f16` scales the loss).
    pub fn precision(mut self, precision: Precision) -> Self {
        self.raw.train.precision = precision;
        self
    }

    /// A hard memory limit, and what a breach does (`memory.limit`, `memory.on_limit`).
    pub fn memory_limit(mut self, limit: MemorySize, on_limit: OnLimit) -> Self {
        self.raw.memory.limit = Some(limit);
        self.raw.memory.on_limit = on_limit;
        self
    }

    /// The device's budget, which every tidemark run on it shares through memory leases
    /// (`memory.device_budget`; [`crate::lease`]), and whether a run waits for room for its
    /// lease (`memory.wait`; `false`: exits 3 at once).
    pub fn device_budget(mut self, budget: impl Into<DeviceBudget>, wait: bool) -> Self {
        self.raw.memory.device_budget = Some(budget.into());
        self.raw.memory.wait = Some(wait);
        self
    }

    /// No memory limit (`memory.limit` unset, `memory.on_limit = "fail"`).
    pub fn no_memory_limit(mut self) -> Self {
        self.raw.memory.limit = None;
        self.raw.memory.on_limit = OnLimit::Fail;
        self
    }

    /// Allocate on demand (`memory.policy = "growth"`).
    pub fn growth(mut self) -> Self {
        self.raw.memory.policy = MemoryPolicyKind::Growth;
        self
    }

    /// Reserve `size` up front (`memory.policy = "preallocate"`).
    pub fn preallocate(mut self, size: MemorySize) -> Self {
        self.raw.memory.policy = MemoryPolicyKind::Preallocate;
        self.raw.memory.preallocate = Some(size);
        self
    }

    /// When memory is released and verified (`memory.clear`).
    pub fn clear(mut self, clear: ClearPolicy) -> Self {
        self.raw.memory.clear = clear;
        self
    }

    /// When memory snapshots are written (`memory.snapshot`).
    pub fn snapshot(mut self, every: SnapshotEvery) -> Self {
        self.raw.memory.snapshot = every;
        self
    }

    /// Weight decay (`train.weight_decay`): L2 for `adam`, `sgd`, `rmsprop`; decoupled for
    /// `adamw`.
    pub fn weight_decay(mut self, decay: f64) -> Self {
        self.raw.train.weight_decay = decay;
        self
    }

    /// Adam's and AdamW's `[beta1, beta2]` (`train.betas`).
    pub fn betas(mut self, beta1: f64, beta2: f64) -> Self {
        self.raw.train.betas = Some([beta1, beta2]);
        self
    }

    /// The denominator's epsilon of `adam`, `adamw` and `rmsprop` (`train.eps`).
    pub fn eps(mut self, eps: f64) -> Self {
        self.raw.train.eps = Some(eps);
        self
    }

    /// The momentum of `sgd` and `rmsprop`, and (`sgd`) whether it is Nesterov's
    /// (`train.momentum`, `train.nesterov`).
    pub fn momentum(mut self, momentum: f64, nesterov: bool) -> Self {
        self.raw.train.momentum = Some(momentum);
        self.raw.train.nesterov = Some(nesterov);
        self
    }

    /// RMSprop's smoothing constant (`train.alpha`).
    pub fn alpha(mut self, alpha: f64) -> Self {
        self.raw.train.alpha = Some(alpha);
        self
    }

    /// Scales each step's gradient down to this global L2 norm (`train.clip_grad_norm`).
    pub fn clip_grad_norm(mut self, norm: f64) -> Self {
        self.raw.train.clip_grad_norm = Some(norm);
        self
    }

    /// Bounds every gradient element to `[-value, value]` (`train.clip_grad_value`).
    pub fn clip_grad_value(mut self, value: f64) -> Self {
        self.raw.train.clip_grad_value = Some(value);
        self
    }

    /// Loss scaling in mixed precision (`train.loss_scaling`), with dynamic scaling's first
    /// scale and the clean steps after which it doubles (`train.initial_loss_scale`,
    /// `train.loss_scale_growth_interval`).
    pub fn loss_scaling(mut self, scaling: LossScaling, initial: f64, growth: usize) -> Self {
        self.raw.train.loss_scaling = Some(scaling);
        self.raw.train.initial_loss_scale = initial;
        self.raw.train.loss_scale_growth_interval = growth;
        self
    }

    /// Recomputes memory-bound activations in the backward pass instead of keeping them
    /// (`train.gradient_checkpointing`).
    pub fn gradient_checkpointing(mut self, on: bool) -> Self {
        self.raw.train.gradient_checkpointing = on;
        self
    }

    /// Where a step sums its micro-batches' gradients (`train.offload.gradients`): `Host`
    /// keeps one gradient set on a device with memory of its own (not flex); `Auto` moves it
    /// there only when a limit needs the saving.
    pub fn offload_gradients(mut self, offload: Offload) -> Self {
        self.raw.train.offload.gradients = offload;
        self
    }

    /// Where the optimizer's state lives and its update runs (`train.offload.optimizer`):
    /// `Host` keeps it, with an f32 master copy of the weights, in host memory, on a device
    /// with memory of its own (not flex).
    pub fn offload_optimizer(mut self, offload: Offload) -> Self {
        self.raw.train.offload.optimizer = offload;
        self
    }

    /// A learning-rate schedule (`[train.schedule]`).
    pub fn schedule(mut self, schedule: ScheduleConfig) -> Self {
        self.raw.train.schedule = Some(schedule);
        self
    }

    /// Early stopping (`[train.early_stopping]`).
    pub fn early_stopping(mut self, early: EarlyStoppingConfig) -> Self {
        self.raw.train.early_stopping = Some(early);
        self
    }

    /// A moving average of the weights (`[train.ema]`).
    pub fn ema(mut self, ema: crate::config::EmaConfig) -> Self {
        self.raw.train.ema = Some(ema);
        self
    }

    /// Direct access to every key as written (each also has a typed setter).
    pub fn raw_mut(&mut self) -> &mut RawConfig {
        &mut self.raw
    }

    /// Validates and returns the configuration. `[model]`'s keys are its kind's, as set: the
    /// run checks them when it starts, or [`build_checked`](Self::build_checked) now.
    pub fn build(self) -> Result<RunConfig, ConfigError> {
        self.build_checked(&|_| Ok(()))
    }

    /// [`build`](Self::build), then `check` (a program's kinds':
    /// `&|c| kinds.resolve(c)`, [`Kinds::resolve`](crate::kinds::Kinds::resolve)).
    pub fn build_checked(self, check: super::Check<'_>) -> Result<RunConfig, ConfigError> {
        if let Some(unusable) = self.unusable {
            return Err(unusable);
        }
        let error = |invalid: super::Invalid| ConfigError {
            origin: "config".into(),
            key: Some(invalid.key),
            message: invalid.message,
        };
        let mut config = RunConfig::try_from(self.raw).map_err(error)?;
        check(&mut config).map_err(error)?;
        Ok(config)
    }

    /// `path` as the config's text for `key`; one that is not UTF-8 is kept to be refused by
    /// `build`, with the key named.
    fn path_text(&mut self, key: &str, path: &std::path::Path) -> Option<String> {
        match super::error::path_text(key, path) {
            Ok(text) => {
                self.usable(key);
                Some(text)
            }
            Err(unusable) => {
                self.unusable(ConfigError {
                    key: Some(key.into()),
                    ..unusable
                });
                None
            }
        }
    }

    /// Keeps the first value a config cannot hold, for `build` to refuse.
    fn unusable(&mut self, error: ConfigError) {
        self.unusable.get_or_insert(error);
    }

    /// `key` set again to a value a config can hold: a value it was refused before is gone.
    fn usable(&mut self, key: &str) {
        if self.unusable.as_ref().and_then(|e| e.key.as_deref()) == Some(key) {
            self.unusable = None;
        }
    }
}

#[cfg(test)]
mod tests;
