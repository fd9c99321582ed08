//! `[model]`.

use serde::Serialize;

/// `[model]`: which network to train: a built-in kind, or a program's own.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ModelConfig {
    /// A multi-layer perceptron.
    Mlp(MlpConfig),
    /// A small convolutional network.
    Cnn(CnnConfig),
    /// A sequence model: LSTM layers over each sample's values read as a sequence.
    Lstm(LstmConfig),
    /// A kind a program registers: its keys are its own, checked by the program's kind.
    #[serde(untagged)]
    App(AppModel),
}

impl ModelConfig {
    /// The kind's name, as `[model] kind` gives it: the name a command looks its kind up by.
    pub fn kind(&self) -> &str {
        match self {
            ModelConfig::Mlp(_) => "mlp",
            ModelConfig::Cnn(_) => "cnn",
            ModelConfig::Lstm(_) => "lstm",
            ModelConfig::App(app) => &app.kind,
        }
    }
}

/// `[model]` of a kind a program registers: its name, and its keys as written (after any
/// `--set`), which the kind reads into its own settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AppModel {
    /// The kind's name.
    pub kind: String,
    /// Its keys, `kind` aside.
    #[serde(flatten)]
    pub settings: toml::Table,
}

/// Stacked LSTM layers (Burn's `nn::Lstm`) over the sample's values, one per step, then a
/// linear head on the last step's hidden state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LstmConfig {
    /// Hidden size of each layer, input side first.
    pub hidden: Vec<usize>,
}

/// A stack of convolution blocks (convolution with "same" padding, optional batch norm, the
/// activation, optional max-pooling), then dropout and a linear head. Inputs are each
/// sample's features read as `[channels, height, width]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CnnConfig {
    /// The image as `[channels, height, width]`; its product is the number of features.
    pub input: [usize; 3],
    /// Output channels of each block.
    pub channels: Vec<usize>,
    /// Square kernel size.
    pub kernel_size: usize,
    /// Max-pooling window after each block; 1 means none.
    pub pool: usize,
    /// Batch normalisation after each convolution.
    pub batch_norm: bool,
    /// Non-linearity after each block.
    pub activation: Activation,
    /// Dropout before the head, in `[0, 1)`.
    pub dropout: f64,
}

/// A multi-layer perceptron: `hidden` linear layers, each followed by the activation and
/// dropout, then a linear head.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MlpConfig {
    /// Hidden layer widths, input side first.
    pub hidden: Vec<usize>,
    /// Non-linearity after each hidden layer.
    pub activation: Activation,
    /// Dropout probability after each hidden layer, in `[0, 1)`.
    pub dropout: f64,
}

/// A non-linearity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    /// max(0, x).
    Relu,
    /// Gaussian error linear unit.
    Gelu,
    /// Hyperbolic tangent.
    Tanh,
    /// Logistic sigmoid.
    Sigmoid,
}
