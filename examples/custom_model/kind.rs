//! The `sales` model kind: its `[model]` keys, checked, and the task a config of it trains.

use std::path::Path;

use burn::tensor::Tensor;
use serde::Deserialize;
use tidemark::config::{Invalid, RunConfig};
use tidemark::data::DataError;
use tidemark::kinds::ModelKind;

use crate::task::{Sale, SaleBatch, Sales, SalesModel, FEATURES};

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

    /// Its sales are drawn from a fixed rule: `[data]` is not read, and its runs' config.toml
    /// keeps none.
    fn own_data(&self) -> bool {
        true
    }

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

    /// A CSV of sales (`f0` to `f7`, `store`, and `amount`, which `predict` may leave out).
    fn task_on_file(
        &self,
        settings: Settings,
        _config: &RunConfig,
        path: &Path,
    ) -> Result<Option<Sales>, tidemark::Error> {
        Ok(Some(Sales::on(settings.width, read_sales(path)?)))
    }

    fn outputs(&self, model: &SalesModel, batch: SaleBatch) -> Option<Tensor<2>> {
        Some(model.forward(batch.features, batch.stores))
    }

    fn output_names(&self) -> &'static [&'static str] {
        &["amount"]
    }
}

/// The sales in the CSV file `path`: a header, then `f0,...,f7,store[,amount]` a line.
fn read_sales(path: &Path) -> Result<Vec<Sale>, tidemark::Error> {
    let text = std::fs::read_to_string(path).map_err(|e| tidemark::Error::io(path, e))?;
    let file = path.display().to_string();
    let bad = |line: usize, message: String| {
        let path = file.clone();
        tidemark::Error::Data(DataError::Format {
            path,
            line,
            message,
        })
    };
    let mut sales = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if !(FEATURES + 1..=FEATURES + 2).contains(&fields.len()) {
            let got = fields.len();
            return Err(bad(
                i + 1,
                format!("{got} columns; a sale has 8 features, store, amount"),
            ));
        }
        let number = |k: usize| {
            let text = fields[k];
            let column = if k < FEATURES {
                format!("f{k}")
            } else {
                "amount".into()
            };
            (text.parse::<f32>())
                .map_err(|_| bad(i + 1, format!("{column}: not a number: {text:?}")))
        };
        let mut features = [0.0; FEATURES];
        for (k, value) in features.iter_mut().enumerate() {
            *value = number(k)?;
        }
        let store = (fields[FEATURES].parse::<u32>().ok())
            .filter(|s| (*s as usize) < crate::task::CATEGORIES)
            .ok_or_else(|| bad(i + 1, format!("store: not a store: {:?}", fields[FEATURES])))?;
        let amount = match fields.len() > FEATURES + 1 {
            true => number(FEATURES + 1)?,
            false => 0.0,
        };
        sales.push(Sale {
            features,
            store,
            amount,
        });
    }
    Ok(sales)
}
