//! A multi-layer perceptron from Burn's `nn` modules.

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Linear, LinearConfig};
use burn::tensor::{Device, Tensor};

use serde::{Deserialize, Serialize};

use super::{activate, dropout_in_range, positives, Activation};
use crate::config::Invalid;

/// `[model]` of `kind = "mlp"`: `hidden` linear layers, each followed by the activation and
/// dropout, then a linear head.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MlpConfig {
    /// Hidden layer widths, input side first.
    #[serde(deserialize_with = "positives")]
    pub hidden: Vec<usize>,
    /// Non-linearity after each hidden layer.
    pub activation: Activation,
    /// Dropout probability after each hidden layer, in `[0, 1)`.
    pub dropout: f64,
}

impl Default for MlpConfig {
    fn default() -> Self {
        Self {
            hidden: vec![1024, 1024],
            activation: Activation::Relu,
            dropout: 0.0,
        }
    }
}

impl MlpConfig {
    /// Checks the settings beyond their types.
    pub fn check(&self) -> Result<(), Invalid> {
        dropout_in_range(self.dropout)
    }
}

/// Linear layers with an activation and dropout between them, and a linear head.
#[derive(Module, Debug)]
pub struct Mlp {
    hidden: Vec<Linear>,
    head: Linear,
    dropout: Dropout,
    #[module(skip)]
    activation: Activation,
}

impl Mlp {
    /// Builds the network on `device`.
    pub fn new(config: &MlpConfig, features: usize, classes: usize, device: &Device) -> Self {
        let mut width = features;
        let hidden = config
            .hidden
            .iter()
            .map(|&w| {
                let layer = LinearConfig::new(width, w).init(device);
                width = w;
                layer
            })
            .collect();
        Self {
            hidden,
            head: LinearConfig::new(width, classes).init(device),
            dropout: DropoutConfig::new(config.dropout).init(),
            activation: config.activation,
        }
    }

    /// Class logits.
    pub fn forward(&self, mut x: Tensor<2>) -> Tensor<2> {
        for layer in &self.hidden {
            x = activate(self.activation, layer.forward(x));
            x = self.dropout.forward(x);
        }
        self.head.forward(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_parameter_count() {
        let device = Device::flex();
        let config = MlpConfig {
            hidden: vec![16, 8],
            activation: Activation::Gelu,
            dropout: 0.1,
        };
        let mlp = Mlp::new(&config, 4, 3, &device);
        assert_eq!(mlp.num_params(), (4 * 16 + 16) + (16 * 8 + 8) + (8 * 3 + 3));
        let out = mlp.forward(Tensor::zeros([5, 4], &device));
        assert_eq!(out.dims(), [5, 3]);
    }
}
