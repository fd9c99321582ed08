//! The `sales` model kind: its `[model]` keys, checked, and the task a config of it trains.

use serde::Deserialize;
use tidemark::config::{Invalid, RunConfig};
use tidemark::kinds::ModelKind;

use crate::task::Sales;

/// `[model] kind = "sales"` and its keys.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// The width of the hidden layer and of the store's embedding.
    #[serde(default = "default_width")]
    pub width: usize,
    /// Sales drawn for the data, a fifth of them held out for validation.
    #[serde(default = "default_samples")]
    pub samples: usize,
}

fn default_width() -> usize {
    256
}

fn default_samples() -> usize {
    16384
}

/// The kind: its data is its own (drawn from a fixed rule), not the config's `[data]`.
pub struct SalesKind;

impl ModelKind for SalesKind {
    type Settings = Settings;
    type Task = Sales;

    fn check(&self, settings: &Settings) -> Result<(), Invalid> {
        let fail = |key: &str, message: String| {
            let key = key.into();
            Err(Invalid { key, message })
        };
        if settings.width == 0 {
            return fail("width", "must be > 0, got 0".into());
        }
        if settings.samples < 10 {
            let samples = settings.samples;
            return fail(
                "samples",
                format!("must be >= 10 (a fifth is held out), got {samples}"),
            );
        }
        Ok(())
    }

    fn metrics(&self) -> &'static [&'static str] {
        &["mae"]
    }

    fn task(&self, settings: Settings, _config: &RunConfig) -> Result<Sales, tidemark::Error> {
        Ok(Sales::new(settings.width, settings.samples))
    }
}
