//! `[train]`.

use std::fmt;

use serde::Serialize;

/// `[train]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainConfig {
    /// Passes over the training split.
    pub epochs: usize,
    /// Samples per micro-batch.
    pub batch_size: usize,
    /// Micro-batches per optimizer step; the effective batch is
    /// `batch_size * accumulation_steps`.
    pub accumulation_steps: usize,
    /// The optimizer.
    pub optimizer: OptimizerKind,
    /// Learning rate.
    pub lr: f64,
    /// L2 weight decay (0 disables it).
    pub weight_decay: f64,
    /// The precision forward and backward compute in; weights and optimizer state stay f32.
    pub precision: Precision,
    /// Whether the loss is scaled to keep small gradients representable.
    pub loss_scaling: LossScaling,
    /// The scale dynamic loss scaling starts from.
    pub initial_loss_scale: f64,
    /// Clean optimizer steps after which the scale doubles.
    pub loss_scale_growth_interval: usize,
    /// Burn's gradient checkpointing on the autodiff device (its balanced strategy).
    pub gradient_checkpointing: bool,
}

/// The floating-point precision of forward and backward compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Single precision throughout.
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

/// Loss scaling for low-precision training.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
}

/// An optimizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OptimizerKind {
    /// Adam (Kingma and Ba).
    Adam,
    /// Plain stochastic gradient descent.
    Sgd,
}
