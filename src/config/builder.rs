//! A typed builder for library users. It fills a [`RawConfig`] and validates it through the
//! same [`TryFrom`] the CLI uses, so code and files obey identical rules.

use super::load::ConfigError;
use super::raw::RawConfig;
use super::raw::RawSize;
use super::size::MemorySize;
use super::types::{
    Backend, ClearPolicy, EarlyStoppingConfig, LossScaling, OnLimit, OptimizerKind, Precision,
    RunConfig, ScheduleConfig,
};

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

    /// Weight decay (`train.weight_decay`): L2 for `adam`, `sgd`, `rmsprop`; decoupled for
    /// `adamw`.
    pub fn weight_decay(mut self, decay: f64) -> Self {
        self.raw.train.weight_decay = Some(decay);
        self
    }

    /// Adam's and AdamW's `[beta1, beta2]` (`train.betas`).
    pub fn betas(mut self, beta1: f64, beta2: f64) -> Self {
        self.raw.train.betas = Some(vec![beta1, beta2]);
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
        let name = match scaling {
            LossScaling::Dynamic => "dynamic",
            LossScaling::Off => "off",
        };
        self.raw.train.loss_scaling = Some(name.into());
        self.raw.train.initial_loss_scale = Some(initial);
        self.raw.train.loss_scale_growth_interval = Some(growth as i64);
        self
    }

    /// Recomputes memory-bound activations in the backward pass instead of keeping them
    /// (`train.gradient_checkpointing`).
    pub fn gradient_checkpointing(mut self, on: bool) -> Self {
        self.raw.train.gradient_checkpointing = Some(on);
        self
    }

    /// A learning-rate schedule (`[train.schedule]`).
    pub fn schedule(mut self, schedule: ScheduleConfig) -> Self {
        self.raw.train.schedule = Some(as_raw(&schedule));
        self
    }

    /// Early stopping (`[train.early_stopping]`).
    pub fn early_stopping(mut self, early: EarlyStoppingConfig) -> Self {
        self.raw.train.early_stopping = Some(as_raw(&early));
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

/// A validated table as the raw one it reads back from (a validated config writes what a
/// file would hold).
fn as_raw<T: serde::Serialize, R: serde::de::DeserializeOwned>(validated: &T) -> R {
    let value = toml::Value::try_from(validated).expect("a validated table serialises");
    value
        .try_into()
        .expect("a validated table reads back as a raw one")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{parse, MonitorMode, ScheduleKind};

    /// The config a file with `[run] name = "b"` and `toml` gives.
    fn file(toml: &str) -> RunConfig {
        parse(&format!("[run]\nname = \"b\"\n{toml}"), "b.toml", &[]).unwrap()
    }

    #[test]
    fn every_train_key_the_docs_show_has_a_setter_equal_to_its_toml() {
        let b = || ConfigBuilder::new("b");
        let schedule = ScheduleConfig {
            kind: ScheduleKind::Cosine,
            warmup_steps: 10,
            min_lr: Some(1e-5),
            decay_steps: Some(100),
            step_size: None,
            gamma: None,
        };
        let early = EarlyStoppingConfig {
            monitor: "val_accuracy".into(),
            mode: MonitorMode::Max,
            patience: 3,
            min_delta: 0.001,
            restore_best: true,
        };
        let cases: Vec<(ConfigBuilder, &str)> = vec![
            (b().weight_decay(0.01), "[train]\nweight_decay = 0.01"),
            (
                b().optimizer(OptimizerKind::Adamw, 1e-3)
                    .betas(0.8, 0.99)
                    .eps(1e-7),
                "[train]\noptimizer = \"adamw\"\nlr = 1e-3\nbetas = [0.8, 0.99]\neps = 1e-7",
            ),
            (
                b().optimizer(OptimizerKind::Sgd, 0.1).momentum(0.9, true),
                "[train]\noptimizer = \"sgd\"\nlr = 0.1\nmomentum = 0.9\nnesterov = true",
            ),
            (
                b().optimizer(OptimizerKind::Rmsprop, 0.01).alpha(0.9),
                "[train]\noptimizer = \"rmsprop\"\nlr = 0.01\nalpha = 0.9",
            ),
            (b().clip_grad_norm(1.0), "[train]\nclip_grad_norm = 1.0"),
            (b().clip_grad_value(0.5), "[train]\nclip_grad_value = 0.5"),
            (
                b().precision(Precision::F16)
                    .loss_scaling(LossScaling::Dynamic, 1024.0, 100),
                "[train]\nprecision = \"f16\"\nloss_scaling = \"dynamic\"\n\
                 initial_loss_scale = 1024.0\nloss_scale_growth_interval = 100",
            ),
            (
                b().gradient_checkpointing(true),
                "[train]\ngradient_checkpointing = true",
            ),
            (
                b().schedule(schedule),
                "[train.schedule]\nkind = \"cosine\"\nwarmup_steps = 10\nmin_lr = 1e-5\n\
                 decay_steps = 100",
            ),
            (
                b().early_stopping(early),
                "[train.early_stopping]\nmonitor = \"val_accuracy\"\nmode = \"max\"\n\
                 patience = 3\nmin_delta = 0.001\nrestore_best = true",
            ),
        ];
        for (builder, toml) in cases {
            assert_eq!(builder.build().unwrap(), file(toml), "{toml}");
        }
        // The setters go through the same validation as a file.
        let e = b().betas(1.5, 0.9).build().unwrap_err();
        assert_eq!(e.key.as_deref(), Some("train.betas"), "{e}");
    }
}
