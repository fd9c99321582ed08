//! `[model]`.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::config::key_error::describe_key_error;
use crate::config::Invalid;

/// `[model]`: which network to train: the name of a kind (`mlp`, or a program's own), and the
/// kind's keys as written (after any `--set`). The config knows no kind: the kind reads its
/// keys into its own settings ([`settings`](Self::settings)) and checks them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelConfig {
    /// The kind's name, as `[model] kind` gives it: the name a command looks its kind up by.
    pub kind: String,
    /// Its keys, `kind` aside.
    #[serde(flatten)]
    pub settings: toml::Table,
}

impl ModelConfig {
    /// The kind's name.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The kind's keys read into its settings `T` (a serde struct): an unknown key, a value
    /// of the wrong type or a missing key is the error, naming the key (`model.hidden[1]`).
    pub fn settings<T: DeserializeOwned>(&self) -> Result<T, Invalid> {
        let table = toml::Value::Table(self.settings.clone());
        serde_path_to_error::deserialize(table).map_err(|e| {
            let key = match e.path().to_string().as_str() {
                "." => "model".to_string(),
                path => format!("model.{path}"),
            };
            let inner = e.into_inner().to_string();
            let missing = inner.strip_prefix("missing field `");
            match missing.and_then(|rest| rest.split('`').next()) {
                Some(field) => Invalid::new(
                    &format!("{key}.{field}"),
                    format_args!("is required with model.kind = \"{}\"", self.kind),
                ),
                None => {
                    let message = describe_key_error(&key, &inner);
                    Invalid { key, message }
                }
            }
        })
    }

    /// `settings` as the kind's keys: the settings a kind read, written back with every
    /// default filled in (what a run's `config.toml` records); `None` where they do not
    /// write as a table of keys.
    pub fn with_settings(kind: &str, settings: &impl Serialize) -> Option<Self> {
        match toml::Value::try_from(settings) {
            Ok(toml::Value::Table(settings)) => Some(Self {
                kind: kind.to_string(),
                settings,
            }),
            _ => None,
        }
    }
}
