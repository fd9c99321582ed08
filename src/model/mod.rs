//! Built-in Burn modules: [`Mlp`], [`Cnn`] and the sequence model [`Lstm`]. Each is a
//! [`Network`], which the built-in tasks ([`Classify`](crate::task::Classify),
//! [`Regress`](crate::task::Regress)) train; a user's own module can be one too.

mod cnn;
mod mlp;
mod sequence;

pub use cnn::{Cnn, CnnConfig};
pub use mlp::{Mlp, MlpConfig};
pub use sequence::{Lstm, LstmConfig};

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};

use crate::config::Invalid;
pub(crate) use crate::config::{positive, positives};

/// A non-linearity (`model.activation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    /// max(0, x).
    #[default]
    Relu,
    /// Gaussian error linear unit.
    Gelu,
    /// Hyperbolic tangent.
    Tanh,
    /// Logistic sigmoid.
    Sigmoid,
}

/// `model.dropout` in `[0, 1)`.
fn dropout_in_range(dropout: f64) -> Result<(), Invalid> {
    match dropout.is_finite() && (0.0..1.0).contains(&dropout) {
        true => Ok(()),
        false => Err(Invalid::new(
            "model.dropout",
            format_args!("must be in [0, 1), got {}", crate::config::Number(dropout)),
        )),
    }
}

/// `key` holds at least one `what`.
fn not_empty(key: &str, values: &[usize], what: &str) -> Result<(), Invalid> {
    match values.is_empty() {
        true => Err(Invalid::new(key, format_args!("needs at least one {what}"))),
        false => Ok(()),
    }
}

/// A module that maps `[batch, features]` to `[batch, outputs]`: class logits for
/// classification, predicted values for regression.
pub trait Network: Module + 'static {
    /// The outputs for `inputs`.
    fn forward(&self, inputs: Tensor<2>) -> Tensor<2>;

    /// Why the model cannot compute in bf16 or f16, if it cannot.
    fn half_precision_unsupported() -> Option<&'static str> {
        None
    }
}

impl Network for Mlp {
    fn forward(&self, inputs: Tensor<2>) -> Tensor<2> {
        Mlp::forward(self, inputs)
    }
}

impl Network for Cnn {
    fn forward(&self, inputs: Tensor<2>) -> Tensor<2> {
        Cnn::forward(self, inputs)
    }
}

impl Network for Lstm {
    fn forward(&self, inputs: Tensor<2>) -> Tensor<2> {
        Lstm::forward(self, inputs)
    }

    fn half_precision_unsupported() -> Option<&'static str> {
        Some(
            "Burn 0.22's LSTM builds its output and state buffers in the device's default \
             float type, f32, and a bf16 or f16 step mixes them with its own values",
        )
    }
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

/// Allocates every parameter of `model` now. Burn initialises parameters lazily, on first
/// use; a run calls this before its `run_start` snapshot so that the snapshot shows the
/// weights.
pub fn initialize<M: Module>(model: &M) {
    struct Touch;
    impl ModuleVisitor for Touch {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            drop(param.val());
        }
    }
    model.visit(&mut Touch);
}

/// Every float parameter of `model`, read back as f32 in the module's visiting order: what two
/// models are compared by (an accumulated update against a large-batch one, a checkpoint
/// against the model it came from).
pub fn parameters<M: Module>(model: &M) -> Vec<f32> {
    struct Flatten(Vec<f32>);
    impl ModuleVisitor for Flatten {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            self.0
                .extend(param.val().into_data().convert::<f32>().iter::<f32>());
        }
    }
    let mut all = Flatten(Vec::new());
    model.visit(&mut all);
    all.0
}
