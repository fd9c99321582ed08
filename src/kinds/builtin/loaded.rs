//! The configured data, loaded for a built-in task: classes or values to predict, split and
//! scaled as training sees it, and the metrics such a task reports.

use crate::config::{DataSource, RunConfig};
use crate::data::{self, Dataset, RowData};
use crate::error::Error;
use crate::model::Mlp;
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
    pub(super) fn shape(&self) -> (usize, usize) {
        match self {
            Loaded::Classes(d) => (d.features, d.classes),
            Loaded::Rows(r, _) => (r.features, r.outputs),
        }
    }
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
