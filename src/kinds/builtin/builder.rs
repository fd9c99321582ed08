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

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::super::networks::Builtin;
    use crate::config::{parse_checked, ConfigBuilder, RunConfig};
    use crate::kinds::Kinds;
    use crate::model::{Activation, Cnn, Lstm, Mlp};

    /// A file of run `b` with `model` as its `[model]` table.
    fn text(model: &str) -> String {
        format!("[run]\nname = \"b\"\n[model]\n{model}")
    }

    fn b() -> ConfigBuilder {
        ConfigBuilder::new("b")
    }

    /// Each built-in setter writes the key a file writes: the same config, resolved by the
    /// built-in kinds; together they reach every key of the three kinds.
    #[test]
    fn each_built_in_setter_writes_the_key_a_file_writes() {
        let cases = [
            (
                b().mlp(&[16, 8]).activation(Activation::Gelu).dropout(0.1),
                "kind = \"mlp\"\nhidden = [16, 8]\nactivation = \"gelu\"\ndropout = 0.1",
            ),
            (
                (b().cnn([1, 8, 8], &[4, 8], 5))
                    .pool(2)
                    .batch_norm(false)
                    .activation(Activation::Tanh)
                    .dropout(0.2),
                "kind = \"cnn\"\ninput = [1, 8, 8]\nchannels = [4, 8]\nkernel_size = 5\npool = 2\n\
                 batch_norm = false\nactivation = \"tanh\"\ndropout = 0.2",
            ),
            (b().lstm(&[16, 8]), "kind = \"lstm\"\nhidden = [16, 8]"),
        ];
        let kinds = Kinds::builtin();
        let check = |c: &mut RunConfig| kinds.resolve(c);
        let mut reached = BTreeSet::new();
        for (mut builder, model) in cases {
            reached.extend(builder.raw_mut().model.settings.keys().cloned());
            let file = parse_checked(&text(model), "t.toml", &[], &check).unwrap();
            assert_eq!(builder.build_checked(&check).unwrap(), file, "{model}");
        }
        let every: BTreeSet<String> = [Mlp::KEYS, Cnn::KEYS, Lstm::KEYS]
            .concat()
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(reached, every, "keys the setters reach");
    }

    /// A bad value from a built-in setter fails as the file does: the same key and message.
    #[test]
    fn a_bad_model_value_from_a_setter_fails_as_the_file_does() {
        let cases = [
            (b().dropout(1.5), "dropout = 1.5"),
            (
                b().mlp(&[8]).pool(2),
                "kind = \"mlp\"\nhidden = [8]\npool = 2",
            ),
            (
                b().cnn([1, 4, 4], &[8, 8, 8], 3),
                "kind = \"cnn\"\ninput = [1, 4, 4]\nchannels = [8, 8, 8]\nkernel_size = 3",
            ),
            (b().lstm(&[]), "kind = \"lstm\"\nhidden = []"),
        ];
        let kinds = Kinds::builtin();
        let check = |c: &mut RunConfig| kinds.resolve(c);
        for (builder, model) in cases {
            let code = builder.build_checked(&check).unwrap_err();
            let file = parse_checked(&text(model), "t.toml", &[], &check).unwrap_err();
            assert_eq!(
                (&code.key, &code.message),
                (&file.key, &file.message),
                "{model}"
            );
            assert_eq!(code.to_string(), format!("config: {}", file.message));
            assert!(!code.to_string().contains('\n'), "{code}");
        }
    }
}
