//! The built-in tasks, from a config's `[model]` and `[data]`: the one place that maps a model
//! kind and a data kind to types. Everything after it is generic over the task.

use burn::tensor::Device;

use super::summary::RunSummary;
use super::trainer::Trainer;
use crate::config::{ConfigError, DataSource, ModelConfig, RunConfig};
use crate::data::{self, Dataset, RowData};
use crate::error::Error;
use crate::model::{Cnn, Lstm, Mlp, Network};
use crate::task::{Classify, Regress};

/// What the configured data is for.
enum Loaded {
    /// Labelled samples: classification.
    Classes(Dataset),
    /// Values to predict: regression (`task` names which).
    Rows(RowData, &'static str),
}

impl Loaded {
    /// Features in, and outputs of the network.
    fn shape(&self) -> (usize, usize) {
        match self {
            Loaded::Classes(d) => (d.features, d.classes),
            Loaded::Rows(r, _) => (r.features, r.outputs),
        }
    }
}

/// Loads the configured data, builds the configured task and trains it.
pub(super) fn run(trainer: Trainer) -> Result<RunSummary, Error> {
    let config = trainer.config();
    let loaded = load(config)?;
    let (features, outputs) = loaded.shape();
    match config.model.clone() {
        ModelConfig::Mlp(mlp) => fit(trainer, loaded, move |device| {
            Mlp::new(&mlp, features, outputs, device)
        }),
        ModelConfig::Cnn(cnn) => {
            let per_sample: usize = cnn.input.iter().product();
            if per_sample != features {
                return Err(Error::Config(ConfigError {
                    origin: "[model]".into(),
                    key: Some("model.input".into()),
                    message: format!(
                        "model.input = {:?} is {per_sample} values per sample, but the data has \
                         {features} features",
                        cnn.input
                    ),
                }));
            }
            fit(trainer, loaded, move |device| {
                Cnn::new(&cnn, outputs, device)
            })
        }
        ModelConfig::Lstm(lstm) => fit(trainer, loaded, move |device| {
            Lstm::new(&lstm.hidden, outputs, device)
        }),
    }
}

fn load(config: &RunConfig) -> Result<Loaded, Error> {
    let data = &config.data;
    Ok(match &data.source {
        DataSource::Csv(csv) if csv.target_column.is_some() => Loaded::Rows(
            data::load_csv_regression(data, csv, config.run.seed)?,
            "regress",
        ),
        DataSource::Series(series) => {
            Loaded::Rows(data::load_series_forecast(data, series)?, "forecast")
        }
        _ => Loaded::Classes(data::load(data, config.run.seed)?),
    })
}

fn fit<N: Network>(
    trainer: Trainer,
    loaded: Loaded,
    build: impl Fn(&Device) -> N + 'static,
) -> Result<RunSummary, Error> {
    match loaded {
        Loaded::Classes(d) => trainer.fit_task(Classify::new(d.train, d.valid, build), true),
        Loaded::Rows(rows, name) => {
            let task = Regress::new(rows.train, rows.valid, rows.unit_scale, build)
                .named(name)
                .with_notes(rows.notes)
                .with_baselines(
                    rows.baselines
                        .into_iter()
                        .map(|b| (b.name, [("mae", b.mae), ("rmse", b.rmse)]))
                        .collect(),
                );
            trainer.fit_task(task, true)
        }
    }
}
