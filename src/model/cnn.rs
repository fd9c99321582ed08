//! A small convolutional network from Burn's `nn` modules.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{
    BatchNorm, BatchNormConfig, Dropout, DropoutConfig, Linear, LinearConfig, PaddingConfig2d,
};
use burn::tensor::{Device, Tensor};

use serde::{Deserialize, Deserializer, Serialize};

use super::{activate, dropout_in_range, not_empty, positive, positives, Activation};
use crate::config::Invalid;

/// `[model]` of `kind = "cnn"`: a stack of convolution blocks (convolution with "same"
/// padding, optional batch norm, the activation, optional max-pooling), then dropout and a
/// linear head. Inputs are each sample's features read as `[channels, height, width]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CnnConfig {
    /// The image as `[channels, height, width]`; its product is the number of features.
    #[serde(deserialize_with = "image")]
    pub input: [usize; 3],
    /// Output channels of each block.
    #[serde(default = "channels", deserialize_with = "positives")]
    pub channels: Vec<usize>,
    /// Square kernel size.
    #[serde(default = "kernel_size", deserialize_with = "positive")]
    pub kernel_size: usize,
    /// Max-pooling window after each block; 1 means none.
    #[serde(default = "pool", deserialize_with = "positive")]
    pub pool: usize,
    /// Batch normalisation after each convolution.
    #[serde(default = "batch_norm")]
    pub batch_norm: bool,
    /// Non-linearity after each block.
    #[serde(default)]
    pub activation: Activation,
    /// Dropout before the head, in `[0, 1)`.
    #[serde(default)]
    pub dropout: f64,
}

fn channels() -> Vec<usize> {
    vec![16, 32]
}
fn kernel_size() -> usize {
    3
}
fn pool() -> usize {
    2
}
fn batch_norm() -> bool {
    true
}

/// `model.input`: three sizes above 0.
fn image<'de, D: Deserializer<'de>>(d: D) -> Result<[usize; 3], D::Error> {
    let sizes = positives(d)?;
    sizes.clone().try_into().map_err(|_| {
        serde::de::Error::custom(format_args!(
            "must be [channels, height, width], got {sizes:?}"
        ))
    })
}

impl CnnConfig {
    /// Checks the settings beyond their types: a block at least, and pooling that leaves
    /// something of the image.
    pub fn check(&self) -> Result<(), Invalid> {
        not_empty("model.channels", &self.channels, "block")?;
        dropout_in_range(self.dropout)?;
        let (pool, blocks, input) = (self.pool, self.channels.len(), self.input);
        let shrink = pool.checked_pow(blocks as u32).unwrap_or(usize::MAX);
        if input[1] / shrink == 0 || input[2] / shrink == 0 {
            return Err(Invalid::new(
                "model.pool",
                format_args!(
                    "= {pool} after each of {blocks} blocks shrinks a {}x{} input to nothing",
                    input[1], input[2]
                ),
            ));
        }
        Ok(())
    }
}

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
