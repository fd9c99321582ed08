//! `[train.ema]`.

use serde::{Deserialize, Serialize};

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
