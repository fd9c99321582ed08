//! `[train]`.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::MonitorMode;

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

/// `[train.ema]`: an exponential moving average of the weights (timm's `ModelEmaV2`), updated
/// after each optimizer step from `start_step` on (before it, the average is the weights).
///
/// The file's table reads into it as it is: each key with its default beside it, a value of
/// the wrong type or an unknown key refused, located, by serde (there is no table "as
/// written" besides), and the check beyond types in `validate/train/ema.rs`. A key of
/// `[train.ema]` is one field here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct EmaConfig {
    /// `average = decay * average + (1 - decay) * weights`, in (0, 1). Default 0.999: timm's
    /// `ModelEmaV2` and Keras's `use_ema` default to 0.9999 and 0.99; a run of thousands of
    /// steps, tidemark's usual, moves with 0.999.
    #[serde(default = "EmaConfig::default_decay")]
    pub decay: f64,
    /// Optimizer steps before the averaging starts (default 0).
    #[serde(default)]
    pub start_step: usize,
    /// Where the average lives (default `same`).
    #[serde(default)]
    pub device: EmaDevice,
    /// What validation, the checkpoints' `evaluate` and `predict` use: the average or the
    /// raw weights (default `average`).
    #[serde(default)]
    pub evaluate_with: EmaWeights,
}

impl EmaConfig {
    fn default_decay() -> f64 {
        0.999
    }
}

impl Default for EmaConfig {
    /// Every key at its default: the table `[train.ema]` with nothing in it.
    fn default() -> Self {
        EmaConfig {
            decay: Self::default_decay(),
            start_step: 0,
            device: EmaDevice::default(),
            evaluate_with: EmaWeights::default(),
        }
    }
}

/// Where `[train.ema]`'s average lives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmaDevice {
    /// On the run's device, with the model.
    #[default]
    Same,
    /// In host memory (a device with memory of its own then holds none of it, but for
    /// validation).
    Host,
}

/// Which weights validation, `evaluate` and `predict` use with `[train.ema]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmaWeights {
    /// The moving average.
    #[default]
    Average,
    /// The weights the optimizer trains.
    Raw,
}

/// `[train.schedule]`: the learning rate per optimizer step, from Burn's schedulers.
///
/// The file's table reads into it as it is, a key of the table one field here (a plateau's
/// too: [`Self::plateau`] gives them together). A key whose default depends on the kind
/// (`min_lr`, `gamma`, a plateau's) or on early stopping (a plateau's `monitor` and `mode`)
/// is `None` where the file leaves it out, and validation writes it in where the kind takes
/// it; `validate/train/schedule.rs` checks which kinds take
/// which keys, and the ranges.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub struct ScheduleConfig {
    /// The decay after the warmup (default `constant`).
    pub kind: ScheduleKind,
    /// Optimizer steps of linear warmup from `lr / warmup_steps` up to `lr` (default 0: none).
    pub warmup_steps: usize,
    /// The floor: where `cosine` and `linear` end (default 0), and below which `step`,
    /// `exponential` and `plateau` do not go. Not with `constant`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_lr: Option<f64>,
    /// `cosine`, `linear`: optimizer steps from `lr` down to `min_lr`; `None`: the rest of the
    /// run after the warmup.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::config::positive_or_none"
    )]
    pub decay_steps: Option<usize>,
    /// `step`: optimizer steps between two decays (required).
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::config::positive_or_none"
    )]
    pub step_size: Option<usize>,
    /// `step`, `exponential`: the factor of each decay (`step`'s default 0.1, Burn's and
    /// PyTorch's; `exponential`'s required).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gamma: Option<f64>,
    /// `plateau`: the validation figure watched (default: early stopping's, else `val_loss`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monitor: Option<String>,
    /// `plateau`: whether lower or higher is better (default: early stopping's with its
    /// monitor, else the figure's own way).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<MonitorMode>,
    /// `plateau`: what the rate is multiplied by at a plateau, in (0, 1) (default 0.1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub factor: Option<f64>,
    /// `plateau`: epochs without improvement before the rate drops (default 10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patience: Option<usize>,
    /// `plateau`: the least change that counts as an improvement (default 1e-4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_delta: Option<f64>,
    /// `plateau`: epochs after a drop during which no epoch counts as waiting (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cooldown: Option<usize>,
    /// `piecewise`: the epochs after which the rate changes, counted from the run's start.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::config::positives_or_none"
    )]
    pub milestones: Option<Vec<usize>>,
    /// `piecewise`: the rate after each milestone, as a factor of `lr` (one per milestone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub factors: Option<Vec<f64>>,
}

impl ScheduleConfig {
    /// A `plateau` schedule's keys together, each left out at its default (Keras's; the
    /// monitor `val_loss`, or its own way); `None` for another kind.
    pub fn plateau(&self) -> Option<PlateauConfig> {
        if self.kind != ScheduleKind::Plateau {
            return None;
        }
        let monitor = (self.monitor.clone()).unwrap_or_else(|| super::Monitor::VAL_LOSS.into());
        let natural = super::Monitor::natural_mode(&monitor).unwrap_or(MonitorMode::Min);
        let keras = PlateauConfig::keras();
        Some(PlateauConfig {
            mode: self.mode.unwrap_or(natural),
            monitor,
            factor: self.factor.unwrap_or(keras.factor),
            patience: self.patience.unwrap_or(keras.patience),
            min_delta: self.min_delta.unwrap_or(keras.min_delta),
            cooldown: self.cooldown.unwrap_or(keras.cooldown),
        })
    }
}

/// `[train.schedule] kind = "plateau"`: Keras's and PyTorch's `ReduceLROnPlateau`. After an
/// epoch whose `monitor` has not improved by more than `min_delta` for `patience` epochs in a
/// row, the rate is multiplied by `factor` (not below `min_lr`), then `cooldown` epochs pass
/// before waiting starts again. A [`ScheduleConfig`]'s keys, resolved ([`ScheduleConfig::plateau`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlateauConfig {
    /// The validation figure watched: `val_loss` or `val_<metric>`.
    pub monitor: String,
    /// Whether lower or higher is better.
    pub mode: MonitorMode,
    /// What the rate is multiplied by at a plateau, in (0, 1).
    pub factor: f64,
    /// Epochs without improvement before the rate drops.
    pub patience: usize,
    /// The least change that counts as an improvement (absolute, as Keras's).
    pub min_delta: f64,
    /// Epochs after a drop during which no epoch counts as waiting.
    pub cooldown: usize,
}

impl PlateauConfig {
    /// Keras's and PyTorch's defaults, watching `val_loss`: factor 0.1, patience 10, `min_delta`
    /// 1e-4 (Keras's), no cooldown.
    fn keras() -> Self {
        PlateauConfig {
            monitor: super::Monitor::VAL_LOSS.into(),
            mode: MonitorMode::Min,
            factor: 0.1,
            patience: 10,
            min_delta: 1e-4,
            cooldown: 0,
        }
    }
}

impl Default for PlateauConfig {
    /// `val_loss`, lower is better, with Keras's factor, patience and `min_delta`.
    fn default() -> Self {
        PlateauConfig::keras()
    }
}

/// A learning-rate schedule's shape after the warmup.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScheduleKind {
    /// `lr` throughout.
    #[default]
    Constant,
    /// A straight line from `lr` to `min_lr`.
    Linear,
    /// Half a cosine from `lr` to `min_lr` (PyTorch's `CosineAnnealingLR`).
    Cosine,
    /// `lr` times `gamma` every `step_size` steps.
    Step,
    /// `lr` times `gamma` every step.
    Exponential,
    /// `lr`, times `factor` at each plateau of a validation figure.
    Plateau,
    /// `lr`, then `lr` times each of `factors` after each of `milestones` (epochs): a schedule
    /// written out, such as population based training finds (`tidemark report`).
    Piecewise,
}

impl ScheduleKind {
    /// The name used in configs.
    pub fn name(self) -> &'static str {
        match self {
            ScheduleKind::Constant => "constant",
            ScheduleKind::Linear => "linear",
            ScheduleKind::Cosine => "cosine",
            ScheduleKind::Step => "step",
            ScheduleKind::Exponential => "exponential",
            ScheduleKind::Plateau => "plateau",
            ScheduleKind::Piecewise => "piecewise",
        }
    }
}

/// A sweep of rates, exponential from `min_lr` to `max_lr` over `steps` optimizer steps (the
/// learning-rate finder's).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct LrRange {
    /// The first step's rate.
    pub min_lr: f64,
    /// The rate of step `steps` and after.
    pub max_lr: f64,
    /// Steps from one to the other.
    pub steps: usize,
}

impl LrRange {
    /// The rate of step `i` (from 0): `min_lr * (max_lr / min_lr)^(i / (steps - 1))`.
    pub fn rate(&self, i: usize) -> f64 {
        let n = self.steps.max(2) - 1;
        let r = i.min(n) as f64 / n as f64;
        self.min_lr * (self.max_lr / self.min_lr).powf(r)
    }
}

/// `[train.early_stopping]`: the run stops when its monitored figure has not improved for
/// `patience` epochs.
///
/// The file's table reads into it as it is (a key of the table is one field here, its default
/// in [`Default`]); `mode`, whose default depends on `monitor`, is left `None` where the file
/// leaves it out and validation writes it in ([`Self::mode`] reads it either way). The checks
/// beyond types are in `validate/train/early_stopping.rs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub struct EarlyStoppingConfig {
    /// The epoch metric watched: `val_loss` or any `val_<metric>` the task reports (default
    /// `val_loss`).
    pub monitor: String,
    /// Whether lower or higher is better; by default the monitor's own way: higher for an
    /// accuracy, else lower.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<MonitorMode>,
    /// Epochs in a row without improvement after which the run stops (default 3, Lightning's).
    pub patience: usize,
    /// The least change that counts as an improvement (default 0: any).
    pub min_delta: f64,
    /// End the run on the best epoch's weights (`checkpoints/best`), not the last epoch's
    /// (default true).
    pub restore_best: bool,
}

impl EarlyStoppingConfig {
    /// Whether lower or higher is better: `mode`, or the monitor's own way where it is unset.
    pub fn mode(&self) -> MonitorMode {
        let natural = super::Monitor::natural_mode(&self.monitor);
        self.mode.unwrap_or(natural.unwrap_or(MonitorMode::Min))
    }
}

impl Default for EarlyStoppingConfig {
    /// Every key at its default: `val_loss`, lower is better, Lightning's patience of 3, any
    /// improvement counts, the best weights restored. Set what differs and take the rest from
    /// here (`EarlyStoppingConfig { patience: 2, ..Default::default() }`): a field added later
    /// then breaks nothing, and a `monitor` set alone brings its own mode.
    fn default() -> Self {
        EarlyStoppingConfig {
            monitor: super::Monitor::VAL_LOSS.into(),
            mode: None,
            patience: 3,
            min_delta: 0.0,
            restore_best: true,
        }
    }
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
