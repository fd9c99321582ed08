//! Models. [`Model`] is the one type the training loop knows; each kind is a variant.

mod cnn;
mod mlp;

pub use cnn::Cnn;
pub use mlp::Mlp;

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::{Device, Tensor};

use crate::config::{Activation, ModelConfig};

/// Any model tidemark can train: maps `[batch, features]` to class logits `[batch, classes]`.
#[derive(Module, Debug)]
pub enum Model {
    /// A multi-layer perceptron.
    Mlp(Mlp),
    /// A convolutional network.
    Cnn(Cnn),
}

/// Applies `activation` element-wise.
pub(crate) fn activate<const D: usize>(activation: Activation, x: Tensor<D>) -> Tensor<D> {
    use burn::tensor::activation::{gelu, relu, sigmoid, tanh};
    match activation {
        Activation::Relu => relu(x),
        Activation::Gelu => gelu(x),
        Activation::Tanh => tanh(x),
        Activation::Sigmoid => sigmoid(x),
    }
}

impl Model {
    /// Builds the configured model for `features` inputs and `classes` outputs on `device`.
    pub fn new(config: &ModelConfig, features: usize, classes: usize, device: &Device) -> Self {
        match config {
            ModelConfig::Mlp(c) => Model::Mlp(Mlp::new(c, features, classes, device)),
            ModelConfig::Cnn(c) => Model::Cnn(Cnn::new(c, classes, device)),
        }
    }

    /// Allocates every parameter now. Burn initialises parameters lazily, on first use; a
    /// run calls this before its `run_start` snapshot so that the snapshot shows the weights.
    pub fn initialize(&self) {
        struct Touch;
        impl ModuleVisitor for Touch {
            fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
                drop(param.val());
            }
        }
        self.visit(&mut Touch);
    }

    /// Class logits for `inputs`.
    pub fn forward(&self, inputs: Tensor<2>) -> Tensor<2> {
        match self {
            Model::Mlp(m) => m.forward(inputs),
            Model::Cnn(m) => m.forward(inputs),
        }
    }
}
