//! The built-in tasks, from a config's `[model]` and `[data]`: the one place that maps a model
//! kind and a data kind to types. Training, `evaluate` and `predict` reach the task through a
//! [`Visit`]or, so that everything after this module is generic over the network.

mod builder;
mod inputs;
mod kind;
mod networks;
mod predict;

pub use kind::kinds;
pub(crate) use networks::Builtin;

use inputs::{inputs, Inputs, Readout};

use burn::tensor::Device;

use crate::config::{DataSource, RunConfig, TASK_SECTIONS};
use crate::data::{self, Dataset, RowData};
use crate::error::Error;
use crate::model::{Mlp, Network};
use crate::task::{Classify, Regress};

/// What the configured data is for.
pub(crate) enum Loaded {
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

/// What to do with a built-in task once its network's type is known.
pub(crate) trait Visit {
    /// What the visit gives.
    type Output;
    /// A classification task.
    fn classify<N: Network>(self, task: Classify<N>) -> Result<Self::Output, Error>;
    /// A regression (or forecasting) task.
    fn regress<N: Network>(self, task: Regress<N>) -> Result<Self::Output, Error>;
}

/// Whether the configured data has values to predict (regression or a forecast) rather than
/// classes, as [`load`] decides it.
fn predicts_values(source: &DataSource) -> bool {
    match source {
        DataSource::Csv(csv) => csv.target_column.is_some(),
        DataSource::Series(_) => true,
        _ => false,
    }
}

/// The metrics the built-in task `config` describes reports, known without loading its data:
/// a search checks its monitor against them before any trial trains.
pub(crate) fn metric_names(config: &RunConfig) -> &'static [&'static str] {
    match predicts_values(&config.data.source) {
        true => Regress::<Mlp>::METRICS,
        false => Classify::<Mlp>::METRICS,
    }
}

/// Loads the configured data, split and scaled as training sees it.
pub(crate) fn load(config: &RunConfig) -> Result<Loaded, Error> {
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

/// Builds the task of network `N` with `settings` over `loaded` and hands it to `visitor`.
pub(crate) fn visit<N: Builtin, V: Visit>(
    settings: N::Settings,
    loaded: Loaded,
    visitor: V,
) -> Result<V::Output, Error> {
    let (features, outputs) = loaded.shape();
    let build = N::build(settings, features, outputs)?;
    task(loaded, visitor, build)
}

fn task<N: Network, V: Visit>(
    loaded: Loaded,
    visitor: V,
    build: impl Fn(&Device) -> N + 'static,
) -> Result<V::Output, Error> {
    match loaded {
        Loaded::Classes(d) => {
            visitor.classify(Classify::new(d.train, d.valid, build).owning(TASK_SECTIONS))
        }
        Loaded::Rows(rows, name) => {
            let task = Regress::new(rows.train, rows.valid, rows.unit_scale, build)
                .named(name)
                .owning(TASK_SECTIONS)
                .with_notes(rows.notes)
                .with_baselines(
                    rows.baselines
                        .into_iter()
                        .map(|b| (b.name, [("mae", b.mae), ("rmse", b.rmse)]))
                        .collect(),
                );
            visitor.regress(task)
        }
    }
}
