//! A small convolutional network from Burn's `nn` modules.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{
    BatchNorm, BatchNormConfig, Dropout, DropoutConfig, Linear, LinearConfig, PaddingConfig2d,
};
use burn::tensor::{Device, Tensor};

use super::activate;
use crate::config::{Activation, CnnConfig};

/// One block: convolution ("same" padding), optional batch norm, activation, optional pooling.
#[derive(Module, Debug)]
struct Block {
    conv: Conv2d,
    norm: Option<BatchNorm>,
    pool: Option<MaxPool2d>,
}

/// Convolution blocks, then dropout and a linear head.
#[derive(Module, Debug)]
pub struct Cnn {
    blocks: Vec<Block>,
    head: Linear,
    dropout: Dropout,
    #[module(skip)]
    input: [usize; 3],
    #[module(skip)]
    activation: Activation,
}

impl Cnn {
    /// Builds the network for `classes` outputs on `device`.
    pub fn new(config: &CnnConfig, classes: usize, device: &Device) -> Self {
        let [mut channels, mut height, mut width] = config.input;
        let blocks = config
            .channels
            .iter()
            .map(|&out| {
                let conv = Conv2dConfig::new([channels, out], [config.kernel_size; 2])
                    .with_padding(PaddingConfig2d::Same)
                    .init(device);
                channels = out;
                let pool = (config.pool > 1).then(|| {
                    height /= config.pool;
                    width /= config.pool;
                    MaxPool2dConfig::new([config.pool; 2]).init()
                });
                Block {
                    conv,
                    norm: config
                        .batch_norm
                        .then(|| BatchNormConfig::new(out).init(device)),
                    pool,
                }
            })
            .collect();
        Self {
            blocks,
            head: LinearConfig::new(channels * height * width, classes).init(device),
            dropout: DropoutConfig::new(config.dropout).init(),
            input: config.input,
            activation: config.activation,
        }
    }

    /// Class logits for `[batch, channels * height * width]` inputs.
    pub fn forward(&self, inputs: Tensor<2>) -> Tensor<2> {
        let [batch, _] = inputs.dims();
        let [c, h, w] = self.input;
        let mut x: Tensor<4> = inputs.reshape([batch, c, h, w]);
        for block in &self.blocks {
            x = block.conv.forward(x);
            if let Some(norm) = &block.norm {
                x = norm.forward(x);
            }
            x = activate(self.activation, x);
            if let Some(pool) = &block.pool {
                x = pool.forward(x);
            }
        }
        let x: Tensor<2> = x.flatten(1, 3);
        self.head.forward(self.dropout.forward(x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_through_blocks_and_pooling() {
        let device = Device::flex();
        let config = CnnConfig {
            input: [1, 8, 8],
            channels: vec![4, 8],
            kernel_size: 3,
            pool: 2,
            batch_norm: true,
            activation: Activation::Relu,
            dropout: 0.0,
        };
        let cnn = Cnn::new(&config, 10, &device);
        let out = cnn.forward(Tensor::zeros([5, 64], &device));
        assert_eq!(out.dims(), [5, 10]);
        // conv 1->4 (3x3 + bias), batch norm over 4 channels (gamma, beta and the running
        // mean and variance, which Burn keeps as parameters), conv 4->8, batch norm over 8,
        // head 8*2*2 -> 10.
        let params = (9 * 4 + 4) + 4 * 4 + (4 * 9 * 8 + 8) + 4 * 8 + (32 * 10 + 10);
        assert_eq!(cnn.num_params(), params);
    }
}
