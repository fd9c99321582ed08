//! A multi-layer perceptron from Burn's `nn` modules.

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Linear, LinearConfig};
use burn::tensor::{Device, Tensor};

use super::activate;
use crate::config::{Activation, MlpConfig};

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
