//! The built-in kinds' setters of [`ConfigBuilder`]: each writes its `[model]` key as a file
//! would, for the kind to read ([`ConfigBuilder::model_key`]).

use crate::config::ConfigBuilder;
use crate::model::Activation;

/// Sizes as a config file writes them.
fn sizes(values: &[usize]) -> toml::Value {
    toml::Value::Array(values.iter().map(|&v| (v as i64).into()).collect())
}

impl ConfigBuilder {
    /// Hidden layer widths of the MLP, or hidden sizes of the LSTM layers (`model.hidden`).
    pub fn hidden(self, widths: &[usize]) -> Self {
        self.model_key("hidden", sizes(widths))
    }

    /// An MLP with these hidden widths (`model.kind = "mlp"`, `model.hidden`).
    pub fn mlp(self, hidden: &[usize]) -> Self {
        self.model("mlp").hidden(hidden)
    }

    /// A CNN over inputs read as `[channels, height, width]`, with one block per entry
    /// of `channels` and square kernels (`model.kind = "cnn"`, `model.input`,
    /// `model.channels`, `model.kernel_size`).
    pub fn cnn(self, input: [usize; 3], channels: &[usize], kernel_size: usize) -> Self {
        self.model("cnn")
            .model_key("input", sizes(&input))
            .model_key("channels", sizes(channels))
            .model_key("kernel_size", kernel_size as i64)
    }

    /// The CNN's max-pooling window after each block; 1: none (`model.pool`).
    pub fn pool(self, window: usize) -> Self {
        self.model_key("pool", window as i64)
    }

    /// Batch normalisation after each CNN convolution (`model.batch_norm`).
    pub fn batch_norm(self, on: bool) -> Self {
        self.model_key("batch_norm", on)
    }

    /// LSTM layers of these hidden sizes (`model.kind = "lstm"`, `model.hidden`).
    pub fn lstm(self, hidden: &[usize]) -> Self {
        self.model("lstm").hidden(hidden)
    }

    /// The MLP's or CNN's non-linearity (`model.activation`).
    pub fn activation(self, activation: Activation) -> Self {
        let name = toml::Value::try_from(activation).expect("an activation is its name");
        self.model_key("activation", name)
    }

    /// Dropout probability of the MLP or CNN, in `[0, 1)` (`model.dropout`).
    pub fn dropout(self, p: f64) -> Self {
        self.model_key("dropout", p)
    }
}
