//! `[train.schedule]`: the learning rate per optimizer step, and the finder's sweep of rates.

use serde::{Deserialize, Serialize};

use super::{Monitor, MonitorMode};

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
        let monitor = (self.monitor.clone()).unwrap_or_else(|| Monitor::VAL_LOSS.into());
        let natural = Monitor::natural_mode(&monitor).unwrap_or(MonitorMode::Min);
        let keras = PlateauConfig::default();
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

impl Default for PlateauConfig {
    /// Keras's and PyTorch's defaults, watching `val_loss` (lower is better): factor 0.1,
    /// patience 10, `min_delta` 1e-4 (Keras's), no cooldown.
    fn default() -> Self {
        PlateauConfig {
            monitor: Monitor::VAL_LOSS.into(),
            mode: MonitorMode::Min,
            factor: 0.1,
            patience: 10,
            min_delta: 1e-4,
            cooldown: 0,
        }
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
