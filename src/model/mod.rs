//! Models. [`Model`] is the one type the training loop knows; each kind is a variant.

mod mlp;

pub use mlp::Mlp;

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::{Device, Tensor};

use crate::config::ModelConfig;

/// Any model tidemark can train: maps `[batch, features]` to class logits `[batch, classes]`.
#[derive(Module, Debug)]
pub enum Model {
    /// A multi-layer perceptron.
    Mlp(Mlp),
}

impl Model {
    /// Builds the configured model for `features` inputs and `classes` outputs on `device`.
    pub fn new(config: &ModelConfig, features: usize, classes: usize, device: &Device) -> Self {
        match config {
            ModelConfig::Mlp(c) => Model::Mlp(Mlp::new(c, features, classes, device)),
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
        }
    }
}
