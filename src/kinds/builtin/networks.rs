//! The built-in networks as kinds: each network (`Mlp`, `Cnn`, `Lstm`) with its settings
//! (`model::MlpConfig`, ...), their check, how the network is built from them, and the names
//! of the keys each takes, so that a key of another built-in kind is refused naming it.

use burn::tensor::Device;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::config::{ConfigError, Invalid, ModelConfig};
use crate::error::Error;
use crate::model::{Cnn, CnnConfig, Lstm, LstmConfig, Mlp, MlpConfig, Network};

/// Each built-in kind's name and keys.
pub(super) const KEYS: [(&str, &[&str]); 3] = [
    (Mlp::NAME, Mlp::KEYS),
    (Cnn::NAME, Cnn::KEYS),
    (Lstm::NAME, Lstm::KEYS),
];

/// `model`'s keys read into `N`'s settings; a key that only other built-in kinds take says
/// which (`model.pool only applies with model.kind = "cnn"`).
pub(super) fn settings_of<N: Builtin>(model: &ModelConfig) -> Result<N::Settings, Invalid> {
    if let Some(key) = model
        .settings
        .keys()
        .find(|k| !N::KEYS.contains(&k.as_str()))
    {
        let kinds: Vec<String> = (KEYS.iter())
            .filter(|(_, keys)| keys.contains(&key.as_str()))
            .map(|(kind, _)| format!("model.kind = \"{kind}\""))
            .collect();
        if !kinds.is_empty() {
            let key = format!("model.{key}");
            let with = kinds.join(" or ");
            return Err(Invalid::new(&key, format_args!("only applies with {with}")));
        }
    }
    let settings = model.settings()?;
    N::check(&settings)?;
    Ok(settings)
}

/// How a network is built on a device.
pub(crate) type Build<N> = Box<dyn Fn(&Device) -> N>;

/// A built-in network and its `[model]` keys.
pub(crate) trait Builtin: Network {
    /// The kind's name.
    const NAME: &'static str;
    /// The kind's keys, read from `[model]`.
    type Settings: DeserializeOwned + Serialize;
    /// The names of [`Settings`](Self::Settings)' keys: a key of another built-in kind is
    /// refused naming the kind it belongs to.
    const KEYS: &'static [&'static str];

    /// Checks `settings` beyond their types.
    fn check(settings: &Self::Settings) -> Result<(), Invalid>;

    /// The network of `settings` for `features` inputs and `outputs` outputs, to build on a
    /// device; the config's error where the data does not fit the settings.
    fn build(
        settings: Self::Settings,
        features: usize,
        outputs: usize,
    ) -> Result<Build<Self>, Error>;
}

impl Builtin for Mlp {
    const NAME: &'static str = "mlp";
    type Settings = MlpConfig;
    const KEYS: &'static [&'static str] = &["hidden", "activation", "dropout"];
    fn check(settings: &MlpConfig) -> Result<(), Invalid> {
        settings.check()
    }
    fn build(settings: MlpConfig, features: usize, outputs: usize) -> Result<Build<Self>, Error> {
        Ok(Box::new(move |device| {
            Mlp::new(&settings, features, outputs, device)
        }))
    }
}

impl Builtin for Cnn {
    const NAME: &'static str = "cnn";
    type Settings = CnnConfig;
    const KEYS: &'static [&'static str] = &[
        "input",
        "channels",
        "kernel_size",
        "pool",
        "batch_norm",
        "activation",
        "dropout",
    ];
    fn check(settings: &CnnConfig) -> Result<(), Invalid> {
        settings.check()
    }
    fn build(settings: CnnConfig, features: usize, outputs: usize) -> Result<Build<Self>, Error> {
        let per_sample: usize = settings.input.iter().product();
        if per_sample != features {
            return Err(Error::Config(ConfigError {
                origin: "[model]".into(),
                key: Some("model.input".into()),
                message: format!(
                    "model.input = {:?} is {per_sample} values per sample, but the data has \
                     {features} features",
                    settings.input
                ),
            }));
        }
        Ok(Box::new(move |device| Cnn::new(&settings, outputs, device)))
    }
}

impl Builtin for Lstm {
    const NAME: &'static str = "lstm";
    type Settings = LstmConfig;
    const KEYS: &'static [&'static str] = &["hidden"];
    fn check(settings: &LstmConfig) -> Result<(), Invalid> {
        settings.check()
    }
    fn build(settings: LstmConfig, _features: usize, outputs: usize) -> Result<Build<Self>, Error> {
        Ok(Box::new(move |device| {
            Lstm::new(&settings.hidden, outputs, device)
        }))
    }
}
