//! `--set key=value`: one override of a config file's key, parsed as TOML, and applied to the
//! file's table before it is read.

use super::error::ConfigError;

/// One `--set key=value` override.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// Dotted key, e.g. `train.batch_size`.
    pub key: String,
    /// The value, parsed as TOML (a bare word that is not TOML is taken as a string).
    pub value: toml::Value,
    /// The text as given, for error messages.
    pub text: String,
}

impl Override {
    /// Parses `key=value`.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let fail = |message: String| ConfigError {
            origin: format!("--set {}", super::error::clipped(text, 80)),
            key: None,
            message,
        };
        let (key, value) = text
            .split_once('=')
            .ok_or_else(|| fail("expected key=value, e.g. train.batch_size=64".into()))?;
        let key = key.trim();
        if key.is_empty() || key.split('.').any(|part| part.trim().is_empty()) {
            return Err(fail(format!(
                "\"{key}\" is not a dotted key like train.batch_size"
            )));
        }
        let value = value.trim();
        let value = match toml::from_str::<toml::Table>(&format!("v = {value}")) {
            Ok(mut table) => table.remove("v").expect("the key was just written"),
            Err(_) => toml::Value::String(value.to_string()),
        };
        Ok(Self {
            key: key.to_string(),
            value,
            text: text.to_string(),
        })
    }

    /// Sets its key in `table`, making the tables above it where they are missing.
    pub(super) fn apply_to(&self, table: &mut toml::Table) -> Result<(), ConfigError> {
        let mut parts: Vec<&str> = self.key.split('.').map(str::trim).collect();
        let last = parts.pop().expect("a key has at least one part");
        let mut current = table;
        for (depth, part) in parts.iter().enumerate() {
            let entry = current
                .entry(part.to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            current = match entry {
                toml::Value::Table(t) => t,
                _ => {
                    return Err(ConfigError {
                        origin: format!("--set {}", super::error::clipped(&self.text, 80)),
                        key: Some(self.key.clone()),
                        message: format!("{} is not a table", parts[..=depth].join(".")),
                    })
                }
            };
        }
        current.insert(last.to_string(), self.value.clone());
        Ok(())
    }
}
