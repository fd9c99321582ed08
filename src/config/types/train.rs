//! `[train]`.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{EarlyStoppingConfig, EmaConfig, LrRange, ScheduleConfig};

/// `[train]`.
///
/// The file's table reads into it as it is, a key of the table one field here and its default
/// in [`Default`]. `lr` is a number, or the word `"find"`, which the reader takes for the
/// setting it names (`find_lr`). A key whose default depends on another's (the optimizer's
/// keys on `optimizer`, `loss_scaling` on `precision`) is `None` where the file leaves it
/// out, and validation writes it in where it applies. The checks beyond types are in
/// `validate/train.rs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub struct TrainConfig {
    /// Passes over the training split (default 5).
    #[serde(deserialize_with = "crate::config::positive")]
    pub epochs: usize,
    /// Samples per micro-batch (default 128).
    #[serde(deserialize_with = "crate::config::positive")]
    pub batch_size: usize,
    /// Micro-batches per optimizer step; the effective batch is
    /// `batch_size * accumulation_steps` (default 1).
    #[serde(deserialize_with = "crate::config::positive")]
    pub accumulation_steps: usize,
    /// The optimizer (default `adam`).
    pub optimizer: OptimizerKind,
    /// Learning rate: the constant one, or the peak a schedule starts from (default 1e-3).
    #[serde(deserialize_with = "rate")]
    pub lr: f64,
    /// Weight decay (0 disables it): an L2 penalty added to the gradient for `adam`, `sgd`
    /// and `rmsprop`; decoupled decay of the weights for `adamw`.
    pub weight_decay: f64,
    /// `adam`, `adamw`: the moment decay rates.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "two_betas"
    )]
    pub betas: Option<[f64; 2]>,
    /// `adam`, `adamw`, `rmsprop`: the term added to the denominator.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eps: Option<f64>,
    /// `sgd`, `rmsprop`: the momentum factor (0: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub momentum: Option<f64>,
    /// `sgd`: Nesterov momentum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nesterov: Option<bool>,
    /// `rmsprop`: the smoothing constant of the squared-gradient average.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// Scale the whole step's gradient down so that its global L2 norm is at most this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clip_grad_norm: Option<f64>,
    /// Clamp every gradient element to `[-v, v]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clip_grad_value: Option<f64>,
    /// The precision forward and backward compute in; weights and optimizer state stay f32.
    pub precision: Precision,
    /// Whether the loss is scaled to keep small gradients representable: by default dynamic
    /// with `f16`, off otherwise ([`Self::loss_scaling`] reads it either way).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss_scaling: Option<LossScaling>,
    /// The scale dynamic loss scaling starts from (default 2^16, as PyTorch's `GradScaler` and
    /// TensorFlow's `LossScaleOptimizer` start).
    pub initial_loss_scale: f64,
    /// Clean optimizer steps after which the scale doubles (default 2000, as those two use).
    #[serde(deserialize_with = "crate::config::positive")]
    pub loss_scale_growth_interval: usize,
    /// Burn's gradient checkpointing on the autodiff device (its balanced strategy).
    pub gradient_checkpointing: bool,
    /// `[train.schedule]`: how the learning rate changes per optimizer step; `None`: constant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleConfig>,
    /// `[train.early_stopping]`: stop when a validation metric stops improving.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub early_stopping: Option<EarlyStoppingConfig>,
    /// The learning-rate finder's sweep of rates, in place of `lr` and the schedule: set by
    /// the finder on its own copy of a run's config; no file sets it.
    #[serde(skip)]
    pub lr_range: Option<LrRange>,
    /// `train.lr = "find"`: the learning-rate finder runs on a copy of the run before it
    /// trains, and its suggestion replaces `lr` (the run's `config.toml` records the rate
    /// found). [`to_toml`](crate::config::to_toml) writes it as `lr = "find"`.
    #[serde(skip)]
    pub find_lr: bool,
    /// `[train.offload]`: what a step keeps in host memory (nothing by default).
    #[serde(skip_serializing_if = "OffloadConfig::is_none")]
    pub offload: OffloadConfig,
    /// `[train.ema]`: an exponential moving average of the weights.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ema: Option<EmaConfig>,
}

/// The floating-point precision of forward and backward compute.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Single precision throughout.
    #[default]
    F32,
    /// bfloat16 compute: f32's range, 8 bits of mantissa.
    Bf16,
    /// IEEE half precision compute: 11 bits of mantissa, largest value 65504.
    F16,
}

impl Precision {
    /// The name used in configs.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::F16 => "f16",
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a part of the training state lives during a step (`[train.offload]`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Offload {
    /// On the device, with the model.
    #[default]
    None,
    /// In host memory, moved to and from the device as the step needs it.
    Host,
    /// On the device until the memory policy needs the saving: a step over the limit that
    /// no shrink or fit can bring under it moves it to host memory from then on.
    Auto,
}

/// `[train.offload]`: what a step on a device with memory of its own keeps in host memory.
/// Read from the file as it is, as [`EmaConfig`]: each key `none` unless set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub struct OffloadConfig {
    /// The sum of a step's micro-batches' gradients: each micro-batch's gradients are moved to
    /// the host after its backward pass and added there, and the sum moves back for the
    /// update, so that the device holds one gradient set instead of two.
    pub gradients: Offload,
    /// The optimizer's state and an f32 master copy of the weights: the update runs in host
    /// memory (on flex) and the updated weights are copied to the device, so that the device
    /// holds no optimizer state.
    pub optimizer: Offload,
}

impl OffloadConfig {
    /// Nothing offloaded (the default, left out of a resolved config).
    pub fn is_none(&self) -> bool {
        *self == OffloadConfig::default()
    }
}

/// Loss scaling for low-precision training.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LossScaling {
    /// Scale the loss; unscale the gradients; skip a step whose gradients are not finite and
    /// halve the scale; double it after `loss_scale_growth_interval` clean steps.
    Dynamic,
    /// No scaling.
    Off,
}

impl TrainConfig {
    /// Samples per optimizer step.
    pub fn effective_batch_size(&self) -> usize {
        self.batch_size * self.accumulation_steps
    }

    /// Whether the loss is scaled: `loss_scaling`, or where it is unset dynamic with `f16`
    /// and off otherwise.
    pub fn loss_scaling(&self) -> LossScaling {
        self.loss_scaling.unwrap_or(match self.precision {
            Precision::F16 => LossScaling::Dynamic,
            Precision::F32 | Precision::Bf16 => LossScaling::Off,
        })
    }
}

impl Default for TrainConfig {
    /// Every key at its default: the table `[train]` with nothing in it.
    fn default() -> Self {
        TrainConfig {
            epochs: 5,
            batch_size: 128,
            accumulation_steps: 1,
            optimizer: OptimizerKind::default(),
            lr: 1e-3,
            weight_decay: 0.0,
            betas: None,
            eps: None,
            momentum: None,
            nesterov: None,
            alpha: None,
            clip_grad_norm: None,
            clip_grad_value: None,
            precision: Precision::default(),
            loss_scaling: None,
            initial_loss_scale: 65536.0,
            loss_scale_growth_interval: 2000,
            gradient_checkpointing: false,
            schedule: None,
            early_stopping: None,
            lr_range: None,
            find_lr: false,
            offload: OffloadConfig::default(),
            ema: None,
        }
    }
}

/// `train.lr` as the file has it: a number (a rate); the word `"find"` is taken out of the
/// table before (as `find_lr`), so that any other text is the error.
fn rate<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    struct Rate;
    impl serde::de::Visitor<'_> for Rate {
        type Value = f64;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a number, or \"find\"")
        }
        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<f64, E> {
            Ok(v)
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<f64, E> {
            Ok(v as f64)
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<f64, E> {
            Ok(v as f64)
        }
        fn visit_str<E: serde::de::Error>(self, word: &str) -> Result<f64, E> {
            Err(E::custom(format_args!(
                "must be a number, or \"find\"; got \"{}\"",
                crate::config::clipped(word, 40)
            )))
        }
    }
    d.deserialize_any(Rate)
}

/// `train.betas` as the file has it: two numbers (their range is validation's).
fn two_betas<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<[f64; 2]>, D::Error> {
    match Vec::<f64>::deserialize(d)?.as_slice() {
        &[b1, b2] => Ok(Some([b1, b2])),
        values => Err(serde::de::Error::custom(format_args!(
            "must be two numbers in [0, 1), like [0.9, 0.999]; got {values:?}"
        ))),
    }
}

/// An optimizer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OptimizerKind {
    /// Adam (Kingma and Ba), with weight decay as an L2 penalty.
    #[default]
    Adam,
    /// AdamW (Loshchilov and Hutter): Adam with decoupled weight decay.
    Adamw,
    /// Stochastic gradient descent, with optional (Nesterov) momentum.
    Sgd,
    /// RMSprop (Hinton), with optional momentum.
    Rmsprop,
}

impl OptimizerKind {
    /// The name used in configs.
    pub fn name(self) -> &'static str {
        match self {
            OptimizerKind::Adam => "adam",
            OptimizerKind::Adamw => "adamw",
            OptimizerKind::Sgd => "sgd",
            OptimizerKind::Rmsprop => "rmsprop",
        }
    }
}
