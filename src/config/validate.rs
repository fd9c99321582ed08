//! Raw -> validated. Defaults live here and nowhere else.

use std::path::PathBuf;

use super::raw::{RawColumn, RawConfig, RawData, RawMemory, RawModel, RawSize, RawTrain};
use super::types::*;

/// Default values for every optional key.
pub mod defaults {
    /// `run.name`.
    pub const RUN_NAME: &str = "run";
    /// `run.seed`.
    pub const SEED: u64 = 42;
    /// `run.output_dir`.
    pub const OUTPUT_DIR: &str = "runs";
    /// `model.hidden`.
    pub const HIDDEN: [usize; 2] = [1024, 1024];
    /// `data.samples` (synthetic).
    pub const SAMPLES: usize = 8192;
    /// `data.features` (synthetic).
    pub const FEATURES: usize = 64;
    /// `data.classes` (synthetic).
    pub const CLASSES: usize = 10;
    /// `data.seed` (synthetic).
    pub const DATA_SEED: u64 = 7;
    /// `data.noise` (synthetic).
    pub const NOISE: f64 = 1.0;
    /// `data.validation_fraction`.
    pub const VALIDATION_FRACTION: f64 = 0.2;
    /// `data.num_workers`.
    pub const NUM_WORKERS: usize = 0;
    /// `train.epochs`.
    pub const EPOCHS: usize = 5;
    /// `train.initial_loss_scale`: 2^16, as PyTorch's `GradScaler` and TensorFlow's
    /// `LossScaleOptimizer` start.
    pub const INITIAL_LOSS_SCALE: f64 = 65536.0;
    /// `train.loss_scale_growth_interval`, as those two use.
    pub const LOSS_SCALE_GROWTH_INTERVAL: usize = 2000;
    /// `train.batch_size`.
    pub const BATCH_SIZE: usize = 128;
    /// `train.lr`.
    pub const LR: f64 = 1e-3;
    /// `memory.preallocate` with `policy = "preallocate"`: JAX's default share.
    pub const PREALLOCATE_FRACTION: f64 = 0.75;
}

/// A key whose value failed validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// Dotted key, e.g. `train.batch_size`.
    pub key: String,
    /// What is wrong, starting with the key: `train.batch_size must be > 0, got 0`.
    pub message: String,
}

impl Invalid {
    fn new(key: &str, message: impl std::fmt::Display) -> Self {
        Self {
            key: key.to_string(),
            message: format!("{key} {message}"),
        }
    }
}

type Result<T> = std::result::Result<T, Invalid>;

fn positive(key: &str, value: Option<i64>, default: usize) -> Result<usize> {
    match value {
        None => Ok(default),
        Some(v) if v > 0 => Ok(v as usize),
        Some(v) => Err(Invalid::new(key, format_args!("must be > 0, got {v}"))),
    }
}

fn non_negative(key: &str, value: Option<i64>, default: u64) -> Result<u64> {
    match value {
        None => Ok(default),
        Some(v) if v >= 0 => Ok(v as u64),
        Some(v) => Err(Invalid::new(key, format_args!("must be >= 0, got {v}"))),
    }
}

fn finite_in(key: &str, value: f64, lo: f64, hi: f64, what: &str) -> Result<f64> {
    if value.is_finite() && value >= lo && value < hi {
        Ok(value)
    } else {
        Err(Invalid::new(
            key,
            format_args!("must be {what}, got {value}"),
        ))
    }
}

fn choice<T: Copy>(key: &str, value: Option<&str>, default: T, options: &[(&str, T)]) -> Result<T> {
    let Some(value) = value else {
        return Ok(default);
    };
    options
        .iter()
        .find(|(name, _)| *name == value)
        .map(|(_, v)| *v)
        .ok_or_else(|| {
            let names: Vec<String> = options.iter().map(|(n, _)| format!("\"{n}\"")).collect();
            Invalid::new(
                key,
                format_args!("must be one of {}, got \"{value}\"", names.join(", ")),
            )
        })
}

impl TryFrom<RawConfig> for RunConfig {
    type Error = Invalid;

    fn try_from(raw: RawConfig) -> Result<Self> {
        let name = raw.run.name.unwrap_or_else(|| defaults::RUN_NAME.into());
        if name.is_empty() || name.contains(['/', '\\']) || name == "." || name == ".." {
            return Err(Invalid::new(
                "run.name",
                format_args!("must be a non-empty directory name without slashes, got \"{name}\""),
            ));
        }
        let run = RunSection {
            name,
            seed: non_negative("run.seed", raw.run.seed, defaults::SEED)?,
            output_dir: PathBuf::from(
                raw.run
                    .output_dir
                    .unwrap_or_else(|| defaults::OUTPUT_DIR.into()),
            ),
        };
        let backends: Vec<(&str, Backend)> = Backend::ALL.iter().map(|b| (b.name(), *b)).collect();
        let device = DeviceConfig {
            backend: choice(
                "device.backend",
                raw.device.backend.as_deref(),
                Backend::Flex,
                &backends,
            )?,
            index: non_negative("device.index", raw.device.index, 0)? as usize,
            execution: raw
                .device
                .execution
                .as_deref()
                .map(|value| {
                    choice(
                        "device.execution",
                        Some(value),
                        Execution::Eager,
                        &[("eager", Execution::Eager), ("fused", Execution::Fused)],
                    )
                })
                .transpose()?,
        };
        Ok(RunConfig {
            run,
            device,
            model: model(raw.model)?,
            data: data(raw.data)?,
            train: train(raw.train)?,
            memory: memory(raw.memory)?,
        })
    }
}

fn size(key: &str, raw: Option<&RawSize>) -> Result<Option<MemorySize>> {
    raw.map(|r| MemorySize::parse(r).map_err(|m| Invalid::new(key, m)))
        .transpose()
}

fn memory(raw: RawMemory) -> Result<MemoryConfig> {
    let policy = choice(
        "memory.policy",
        raw.policy.as_deref(),
        MemoryPolicyKind::Growth,
        &[
            ("growth", MemoryPolicyKind::Growth),
            ("preallocate", MemoryPolicyKind::Preallocate),
        ],
    )?;
    let preallocate = size("memory.preallocate", raw.preallocate.as_ref())?;
    // Kept under `growth` too (unused there), so `--set memory.policy=growth` works on a
    // config written for preallocation.
    let preallocate = match policy {
        MemoryPolicyKind::Growth => preallocate,
        MemoryPolicyKind::Preallocate => {
            Some(preallocate.unwrap_or(MemorySize::Fraction(defaults::PREALLOCATE_FRACTION)))
        }
    };
    let limit = size("memory.limit", raw.limit.as_ref())?;
    let on_limit = choice(
        "memory.on_limit",
        raw.on_limit.as_deref(),
        OnLimit::Fail,
        &[("fail", OnLimit::Fail), ("shrink", OnLimit::Shrink)],
    )?;
    if on_limit == OnLimit::Shrink && limit.is_none() {
        return Err(Invalid::new(
            "memory.on_limit",
            "= \"shrink\" needs memory.limit to be set",
        ));
    }
    let clear = choice(
        "memory.clear",
        raw.clear.as_deref(),
        ClearPolicy::BetweenRuns,
        &[
            ("never", ClearPolicy::Never),
            ("between_runs", ClearPolicy::BetweenRuns),
            ("every_epoch", ClearPolicy::EveryEpoch),
        ],
    )?;
    if clear == ClearPolicy::EveryEpoch && policy == MemoryPolicyKind::Preallocate {
        return Err(Invalid::new(
            "memory.clear",
            "= \"every_epoch\" would release the preallocated reservation after each epoch; \
             use \"between_runs\" with memory.policy = \"preallocate\"",
        ));
    }
    if let (
        MemoryPolicyKind::Preallocate,
        Some(MemorySize::Bytes(reserve)),
        Some(MemorySize::Bytes(cap)),
    ) = (policy, preallocate, limit)
    {
        if reserve > cap {
            return Err(Invalid::new(
                "memory.preallocate",
                format_args!(
                    "({}) is larger than memory.limit ({})",
                    MemorySize::Bytes(reserve),
                    MemorySize::Bytes(cap)
                ),
            ));
        }
    }
    Ok(MemoryConfig {
        policy,
        preallocate,
        limit,
        on_limit,
        clear,
        snapshot: choice(
            "memory.snapshot",
            raw.snapshot.as_deref(),
            SnapshotEvery::Epoch,
            &[("epoch", SnapshotEvery::Epoch)],
        )?,
    })
}

fn model(raw: RawModel) -> Result<ModelConfig> {
    #[derive(Clone, Copy, PartialEq)]
    enum Kind {
        Mlp,
        Cnn,
    }
    let kind = choice(
        "model.kind",
        raw.kind.as_deref(),
        Kind::Mlp,
        &[("mlp", Kind::Mlp), ("cnn", Kind::Cnn)],
    )?;
    let activation = choice(
        "model.activation",
        raw.activation.as_deref(),
        Activation::Relu,
        &[
            ("relu", Activation::Relu),
            ("gelu", Activation::Gelu),
            ("tanh", Activation::Tanh),
            ("sigmoid", Activation::Sigmoid),
        ],
    )?;
    let dropout = finite_in(
        "model.dropout",
        raw.dropout.unwrap_or(0.0),
        0.0,
        1.0,
        "in [0, 1)",
    )?;
    let widths = |key: &str, values: Vec<i64>| -> Result<Vec<usize>> {
        values
            .iter()
            .enumerate()
            .map(|(i, &w)| positive(&format!("{key}[{i}]"), Some(w), 0))
            .collect()
    };
    match kind {
        Kind::Mlp => {
            for (key, present) in [
                ("model.input", raw.input.is_some()),
                ("model.channels", raw.channels.is_some()),
                ("model.kernel_size", raw.kernel_size.is_some()),
                ("model.pool", raw.pool.is_some()),
                ("model.batch_norm", raw.batch_norm.is_some()),
            ] {
                if present {
                    return Err(Invalid::new(key, "only applies with model.kind = \"cnn\""));
                }
            }
            let hidden = match raw.hidden {
                None => defaults::HIDDEN.to_vec(),
                Some(values) => widths("model.hidden", values)?,
            };
            Ok(ModelConfig::Mlp(MlpConfig {
                hidden,
                activation,
                dropout,
            }))
        }
        Kind::Cnn => {
            if raw.hidden.is_some() {
                return Err(Invalid::new(
                    "model.hidden",
                    "only applies with model.kind = \"mlp\" (a CNN has model.channels)",
                ));
            }
            let input = raw.input.ok_or_else(|| {
                Invalid::new(
                    "model.input",
                    "is required with model.kind = \"cnn\": [channels, height, width]",
                )
            })?;
            let input: [usize; 3] =
                widths("model.input", input.clone())?
                    .try_into()
                    .map_err(|_| {
                        Invalid::new(
                            "model.input",
                            format_args!("must be [channels, height, width], got {input:?}"),
                        )
                    })?;
            let channels = widths("model.channels", raw.channels.unwrap_or(vec![16, 32]))?;
            if channels.is_empty() {
                return Err(Invalid::new("model.channels", "needs at least one block"));
            }
            let pool = positive("model.pool", raw.pool, 2)?;
            let (mut h, mut w) = (input[1], input[2]);
            for _ in &channels {
                h /= pool;
                w /= pool;
            }
            if h == 0 || w == 0 {
                return Err(Invalid::new(
                    "model.pool",
                    format_args!(
                        "= {pool} after each of {} blocks shrinks a {}x{} input to nothing",
                        channels.len(),
                        input[1],
                        input[2]
                    ),
                ));
            }
            Ok(ModelConfig::Cnn(CnnConfig {
                input,
                channels,
                kernel_size: positive("model.kernel_size", raw.kernel_size, 3)?,
                pool,
                batch_norm: raw.batch_norm.unwrap_or(true),
                activation,
                dropout,
            }))
        }
    }
}

/// An error if a key is present that only applies with another `data.kind`.
fn misplaced_key(key: &str, present: bool, with: &str) -> Result<()> {
    if present {
        Err(Invalid::new(
            key,
            format_args!("only applies with data.kind = \"{with}\""),
        ))
    } else {
        Ok(())
    }
}

fn data(raw: RawData) -> Result<DataConfig> {
    #[derive(Clone, Copy, PartialEq)]
    enum Kind {
        Synthetic,
        Csv,
        Idx,
    }
    let kind = choice(
        "data.kind",
        raw.kind.as_deref(),
        Kind::Synthetic,
        &[
            ("synthetic", Kind::Synthetic),
            ("csv", Kind::Csv),
            ("idx", Kind::Idx),
        ],
    )?;
    let existing = |key: &str, path: Option<String>, kind: &str| -> Result<PathBuf> {
        let path = path.ok_or_else(|| {
            Invalid::new(key, format_args!("is required with data.kind = \"{kind}\""))
        })?;
        let path = PathBuf::from(path);
        if path.is_file() {
            Ok(path)
        } else {
            Err(Invalid::new(
                key,
                format_args!("names a file that does not exist: {}", path.display()),
            ))
        }
    };
    if kind != Kind::Idx {
        misplaced_key("data.images", raw.images.is_some(), "idx")?;
        misplaced_key("data.labels", raw.labels.is_some(), "idx")?;
    }
    let misplaced = misplaced_key;
    let source = match kind {
        Kind::Synthetic => {
            misplaced("data.path", raw.path.is_some(), "csv")?;
            misplaced("data.label_column", raw.label_column.is_some(), "csv")?;
            misplaced("data.header", raw.header.is_some(), "csv")?;
            let classes = positive("data.classes", raw.classes, defaults::CLASSES)?;
            if classes < 2 {
                return Err(Invalid::new(
                    "data.classes",
                    format_args!("must be >= 2, got {classes}"),
                ));
            }
            DataSource::Synthetic(SyntheticConfig {
                samples: positive("data.samples", raw.samples, defaults::SAMPLES)?,
                features: positive("data.features", raw.features, defaults::FEATURES)?,
                classes,
                seed: non_negative("data.seed", raw.seed, defaults::DATA_SEED)?,
                noise: finite_in(
                    "data.noise",
                    raw.noise.unwrap_or(defaults::NOISE),
                    0.0,
                    f64::MAX,
                    "a finite number >= 0",
                )?,
            })
        }
        Kind::Csv => {
            for (key, present) in [
                ("data.samples", raw.samples.is_some()),
                ("data.features", raw.features.is_some()),
                ("data.classes", raw.classes.is_some()),
                ("data.seed", raw.seed.is_some()),
                ("data.noise", raw.noise.is_some()),
            ] {
                misplaced(key, present, "synthetic")?;
            }
            let path = existing("data.path", raw.path, "csv")?;
            DataSource::Csv(CsvConfig {
                path,
                label_column: match raw.label_column {
                    None => Column::Index(-1),
                    Some(RawColumn::Index(i)) => Column::Index(i),
                    Some(RawColumn::Name(n)) => Column::Name(n),
                },
                header: raw.header,
            })
        }
        Kind::Idx => {
            for (key, present, with) in [
                ("data.samples", raw.samples.is_some(), "synthetic"),
                ("data.features", raw.features.is_some(), "synthetic"),
                ("data.classes", raw.classes.is_some(), "synthetic"),
                ("data.seed", raw.seed.is_some(), "synthetic"),
                ("data.noise", raw.noise.is_some(), "synthetic"),
                ("data.path", raw.path.is_some(), "csv"),
                ("data.label_column", raw.label_column.is_some(), "csv"),
                ("data.header", raw.header.is_some(), "csv"),
            ] {
                misplaced(key, present, with)?;
            }
            DataSource::Idx(IdxConfig {
                images: existing("data.images", raw.images, "idx")?,
                labels: existing("data.labels", raw.labels, "idx")?,
            })
        }
    };
    // Files get the treatment real data needs; synthetic data is generated centred, scaled and
    // balanced, and keeps its plain seeded split so that the benchmark workloads stay
    // comparable from version to version.
    let from_file = !matches!(source, DataSource::Synthetic(_));
    let standardize = raw.standardize.unwrap_or(from_file);
    Ok(DataConfig {
        source,
        standardize,
        stratify: raw.stratify.unwrap_or(from_file),
        validation_fraction: finite_in(
            "data.validation_fraction",
            raw.validation_fraction
                .unwrap_or(defaults::VALIDATION_FRACTION),
            f64::MIN_POSITIVE,
            1.0,
            "in (0, 1)",
        )?,
        num_workers: non_negative(
            "data.num_workers",
            raw.num_workers,
            defaults::NUM_WORKERS as u64,
        )? as usize,
    })
}

fn train(raw: RawTrain) -> Result<TrainConfig> {
    let lr = raw.lr.unwrap_or(defaults::LR);
    if !(lr.is_finite() && lr > 0.0) {
        return Err(Invalid::new(
            "train.lr",
            format_args!("must be a finite number > 0, got {lr}"),
        ));
    }
    let precision = choice(
        "train.precision",
        raw.precision.as_deref(),
        Precision::F32,
        &[
            ("f32", Precision::F32),
            ("bf16", Precision::Bf16),
            ("f16", Precision::F16),
        ],
    )?;
    let loss_scaling = choice(
        "train.loss_scaling",
        raw.loss_scaling.as_deref(),
        match precision {
            Precision::F16 => LossScaling::Dynamic,
            Precision::F32 | Precision::Bf16 => LossScaling::Off,
        },
        &[("dynamic", LossScaling::Dynamic), ("off", LossScaling::Off)],
    )?;
    if loss_scaling == LossScaling::Dynamic && precision == Precision::F32 {
        return Err(Invalid::new(
            "train.loss_scaling",
            "\"dynamic\" needs train.precision = \"f16\" or \"bf16\"; f32 gradients do not underflow",
        ));
    }
    let initial_loss_scale = finite_in(
        "train.initial_loss_scale",
        raw.initial_loss_scale
            .unwrap_or(defaults::INITIAL_LOSS_SCALE),
        f64::MIN_POSITIVE,
        f64::MAX,
        "a finite number > 0",
    )?;
    Ok(TrainConfig {
        gradient_checkpointing: raw.gradient_checkpointing.unwrap_or(false),
        precision,
        loss_scaling,
        initial_loss_scale,
        loss_scale_growth_interval: positive(
            "train.loss_scale_growth_interval",
            raw.loss_scale_growth_interval,
            defaults::LOSS_SCALE_GROWTH_INTERVAL,
        )?,
        epochs: positive("train.epochs", raw.epochs, defaults::EPOCHS)?,
        batch_size: positive("train.batch_size", raw.batch_size, defaults::BATCH_SIZE)?,
        accumulation_steps: positive("train.accumulation_steps", raw.accumulation_steps, 1)?,
        optimizer: choice(
            "train.optimizer",
            raw.optimizer.as_deref(),
            OptimizerKind::Adam,
            &[("adam", OptimizerKind::Adam), ("sgd", OptimizerKind::Sgd)],
        )?,
        lr,
        weight_decay: finite_in(
            "train.weight_decay",
            raw.weight_decay.unwrap_or(0.0),
            0.0,
            f64::MAX,
            "a finite number >= 0",
        )?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(edit: impl FnOnce(&mut RawConfig)) -> std::result::Result<RunConfig, Invalid> {
        let mut raw = RawConfig::default();
        edit(&mut raw);
        RunConfig::try_from(raw)
    }

    #[test]
    fn empty_config_takes_the_defaults() {
        let cfg = with(|_| {}).unwrap();
        assert_eq!(cfg.train.batch_size, defaults::BATCH_SIZE);
        assert_eq!(cfg.train.accumulation_steps, 1);
        assert_eq!(cfg.device.backend, Backend::Flex);
        assert_eq!(
            cfg.model,
            ModelConfig::Mlp(MlpConfig {
                hidden: vec![1024, 1024],
                activation: Activation::Relu,
                dropout: 0.0
            })
        );
        assert!(matches!(cfg.data.source, DataSource::Synthetic(_)));
    }

    #[test]
    fn zero_and_negative_sizes_name_the_key_and_value() {
        let err = with(|r| r.train.batch_size = Some(0)).unwrap_err();
        assert_eq!(err.message, "train.batch_size must be > 0, got 0");
        let err = with(|r| r.model.hidden = Some(vec![64, -3])).unwrap_err();
        assert_eq!(err.key, "model.hidden[1]");
        assert_eq!(err.message, "model.hidden[1] must be > 0, got -3");
    }

    #[test]
    fn unknown_choice_lists_the_options() {
        let err = with(|r| r.train.optimizer = Some("adamw".into())).unwrap_err();
        assert_eq!(
            err.message,
            "train.optimizer must be one of \"adam\", \"sgd\", got \"adamw\""
        );
    }

    #[test]
    fn keys_of_the_other_data_kind_are_rejected() {
        let err = with(|r| r.data.path = Some("x.csv".into())).unwrap_err();
        assert_eq!(
            err.message,
            "data.path only applies with data.kind = \"csv\""
        );
    }

    #[test]
    fn missing_csv_file_is_named() {
        let err = with(|r| {
            r.data.kind = Some("csv".into());
            r.data.path = Some("no/such/file.csv".into());
        })
        .unwrap_err();
        assert_eq!(err.key, "data.path");
        assert!(err.message.contains("no/such/file.csv"), "{}", err.message);
    }

    #[test]
    fn memory_section_validates_sizes_and_combinations() {
        let cfg = with(|r| {
            r.memory.limit = Some(RawSize::Text("512MiB".into()));
            r.memory.on_limit = Some("shrink".into());
        })
        .unwrap();
        assert_eq!(cfg.memory.limit, Some(MemorySize::Bytes(512 << 20)));
        assert_eq!(cfg.memory.on_limit, OnLimit::Shrink);
        assert_eq!(cfg.memory.clear, ClearPolicy::BetweenRuns);
        let pre = with(|r| r.memory.policy = Some("preallocate".into())).unwrap();
        assert_eq!(pre.memory.preallocate, Some(MemorySize::Fraction(0.75)));
        let err = with(|r| r.memory.limit = Some(RawSize::Text("lots".into()))).unwrap_err();
        assert_eq!(
            err.message,
            "memory.limit must be a size like \"512MiB\" or \"2GB\", got \"lots\""
        );
        let err = with(|r| r.memory.on_limit = Some("shrink".into())).unwrap_err();
        assert_eq!(
            err.message,
            "memory.on_limit = \"shrink\" needs memory.limit to be set"
        );
        let kept = with(|r| r.memory.preallocate = Some(RawSize::Text("1GiB".into()))).unwrap();
        assert_eq!(kept.memory.preallocate, Some(MemorySize::Bytes(1 << 30)));
        let err = with(|r| {
            r.memory.policy = Some("preallocate".into());
            r.memory.clear = Some("every_epoch".into());
        })
        .unwrap_err();
        assert_eq!(err.key, "memory.clear");
        let err = with(|r| {
            r.memory.policy = Some("preallocate".into());
            r.memory.preallocate = Some(RawSize::Text("1GiB".into()));
            r.memory.limit = Some(RawSize::Text("512MiB".into()));
        })
        .unwrap_err();
        assert_eq!(
            err.message,
            "memory.preallocate (1GiB) is larger than memory.limit (512MiB)"
        );
    }

    #[test]
    fn fractions_and_rates_are_range_checked() {
        assert!(with(|r| r.data.validation_fraction = Some(1.0)).is_err());
        assert!(with(|r| r.model.dropout = Some(-0.1)).is_err());
        assert!(with(|r| r.train.lr = Some(f64::NAN)).is_err());
        assert!(with(|r| r.train.lr = Some(0.0)).is_err());
    }
}
