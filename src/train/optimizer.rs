//! The configured optimizer, from Burn's: [`FusedAdam`] (Burn's Adam in one pass per
//! parameter on flex) for `adam`, and Burn's `AdamW`, `Sgd` (with momentum) and `RmsProp`
//! for the rest.
//!
//! What `train.weight_decay` means differs by optimizer, as it does in PyTorch:
//! - `adam`, `sgd`, `rmsprop`: an L2 penalty, `weight_decay * w` added to the gradient before
//!   the update (Burn's `WeightDecayConfig`), so Adam's and RMSprop's normalisation rescales
//!   it;
//! - `adamw`: decoupled decay, `w -= lr * weight_decay * w` beside the Adam update, untouched
//!   by the moments (Loshchilov and Hutter).

use burn::optim::decay::WeightDecayConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{AdamWConfig, ModuleOptimizer, RmsPropConfig, SgdConfig};

use crate::config::{defaults, OptimizerKind, TrainConfig};

/// Builds the configured optimizer.
pub fn build_optimizer(config: &TrainConfig) -> ModuleOptimizer {
    let decay = (config.weight_decay > 0.0).then_some(config.weight_decay as f32);
    let [beta_1, beta_2] = config.betas.unwrap_or(defaults::BETAS).map(|b| b as f32);
    let eps = config.eps.unwrap_or(defaults::EPS) as f32;
    let momentum = config.momentum.unwrap_or(defaults::MOMENTUM);
    match config.optimizer {
        OptimizerKind::Adam => ModuleOptimizer::from(FusedAdam::with(beta_1, beta_2, eps, decay)),
        OptimizerKind::Adamw => AdamWConfig::new()
            .with_beta_1(beta_1)
            .with_beta_2(beta_2)
            .with_epsilon(eps)
            .with_weight_decay(config.weight_decay as f32)
            .init(),
        OptimizerKind::Sgd => SgdConfig::new()
            .with_weight_decay(decay.map(WeightDecayConfig::new))
            .with_momentum((momentum > 0.0).then(|| MomentumConfig {
                momentum,
                // PyTorch's default, and what Nesterov momentum needs; Burn's is 0.1.
                dampening: 0.0,
                nesterov: config.nesterov.unwrap_or(defaults::NESTEROV),
            }))
            .init(),
        OptimizerKind::Rmsprop => RmsPropConfig::new()
            .with_alpha(config.alpha.unwrap_or(defaults::RMSPROP_ALPHA) as f32)
            .with_momentum(momentum as f32)
            .with_epsilon(eps)
            .with_weight_decay(decay.map(WeightDecayConfig::new))
            .init(),
    }
}

/// How many parameter-sized tensors the optimizer keeps per parameter once it has stepped.
pub fn state_copies(config: &TrainConfig) -> u64 {
    let momentum = u64::from(config.momentum.is_some_and(|m| m > 0.0));
    match config.optimizer {
        // The two moments.
        OptimizerKind::Adam | OptimizerKind::Adamw => 2,
        OptimizerKind::Sgd => momentum,
        // The squared-gradient average and Burn's centred average, and the momentum buffer.
        OptimizerKind::Rmsprop => 2 + momentum,
    }
}

mod adam;

pub use adam::FusedAdam;

#[cfg(test)]
mod tests;
