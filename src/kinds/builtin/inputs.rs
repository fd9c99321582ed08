//! A file to score or predict on with a finished run, prepared exactly as the run's training
//! data were: the same columns, scaled with the training split's statistics, cut into the same
//! windows.

use std::path::Path;

use super::loaded::{load, Loaded};
use crate::config::{Column, CsvConfig, DataConfig, DataSource, RunConfig};
use crate::data::{self, DataError, FeatureScaling, Row, RowScaling, Sample};
use crate::error::{Error, UsageError};

/// A file's items, ready for the run's model.
pub(crate) struct Inputs {
    /// The run's data with its validation split replaced by the file's items (and no training
    /// items).
    pub(crate) loaded: Loaded,
    /// Per item: whether the file gave its label or target. A file to predict on may leave
    /// the label column out, and a series' last windows have no targets yet.
    pub(crate) labelled: Vec<bool>,
    /// Per item: the data row it came from (0-based, a header not counted), or for a series
    /// the index of the first value it forecasts.
    pub(crate) ids: Vec<usize>,
    /// Per item, for values: how an output goes back to the data's units.
    pub(crate) readouts: Vec<Readout>,
}

/// A scaled output `y` is `offset + scale × y` in the data's units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Readout {
    pub(crate) offset: f64,
    pub(crate) scale: f64,
}

impl Readout {
    /// `y` in the data's units.
    pub(crate) fn value(&self, y: f32) -> f64 {
        self.offset + self.scale * f64::from(y)
    }
}

impl Inputs {
    /// Only the items with labels or targets, to score: an error naming the file and the
    /// column if there are none.
    pub(crate) fn labelled(self, path: &Path, config: &RunConfig) -> Result<Loaded, Error> {
        if !self.labelled.iter().any(|&l| l) {
            return Err(missing_labels(path, config));
        }
        let keep = |i: usize| self.labelled[i];
        Ok(match self.loaded {
            Loaded::Classes(mut d) => {
                d.valid = keep_where(d.valid, keep);
                Loaded::Classes(d)
            }
            Loaded::Rows(mut r, name) => {
                r.valid = keep_where(r.valid, keep);
                Loaded::Rows(r, name)
            }
        })
    }
}

fn keep_where<T>(items: Vec<T>, keep: impl Fn(usize) -> bool) -> Vec<T> {
    items
        .into_iter()
        .enumerate()
        .filter(|(i, _)| keep(*i))
        .map(|(_, item)| item)
        .collect()
}

/// The file at `path`, laid out like the run's data (`config`'s `[data]`), prepared as its
/// training data were.
pub(crate) fn inputs(config: &RunConfig, path: &Path) -> Result<Inputs, Error> {
    let trained = load(config)?;
    match (&config.data.source, trained) {
        (DataSource::Synthetic(_), _) => Err(Error::Usage(UsageError::new(
            format!("--data {}", path.display()),
            "the run trained on synthetic data, which has no file layout to read another file \
             by; leave --data out to use the run's validation split",
        ))),
        (DataSource::Series(series), Loaded::Rows(rows, name)) => {
            let loaded = data::series::load_series(path, &series.column, series.header)?;
            let values = loaded.fill(series.gaps)?;
            Ok(series_inputs(&values, series, rows, name))
        }
        (DataSource::Csv(csv), Loaded::Rows(rows, name)) => {
            let csv = CsvConfig {
                path: path.to_path_buf(),
                ..csv.clone()
            };
            let scaling = match config.data.standardize() {
                true => Some(row_scaling(config, rows.features)?),
                false => None,
            };
            let records = data::load_csv_inputs(&csv, rows.features)?;
            Ok(row_inputs(records, scaling, rows, name))
        }
        (source, Loaded::Classes(trained)) => {
            let csv = match source {
                DataSource::Csv(csv) => CsvConfig {
                    path: path.to_path_buf(),
                    ..csv.clone()
                },
                // IDX images come as CSV rows of pixels, with the label last if at all.
                _ => CsvConfig {
                    path: path.to_path_buf(),
                    label_column: Some(Column::Index(-1)),
                    target_column: None,
                    header: None,
                },
            };
            let scaling = match config.data.standardize() {
                true => Some(feature_scaling(config)?),
                false => None,
            };
            let records = data::load_csv_inputs(&csv, trained.features)?;
            class_inputs(path, records, scaling, trained)
        }
        (_, Loaded::Rows(..)) => unreachable!("rows come from a CSV target column or a series"),
    }
}

/// `config`'s data as loaded before standardising: what the scaling is fitted on.
fn unscaled(config: &RunConfig) -> DataConfig {
    DataConfig {
        standardize: Some(false),
        ..config.data.clone()
    }
}

fn feature_scaling(config: &RunConfig) -> Result<FeatureScaling, Error> {
    let raw = data::load(&unscaled(config), config.run.seed)?;
    Ok(FeatureScaling::fit(&raw.train, raw.features))
}

fn row_scaling(config: &RunConfig, features: usize) -> Result<RowScaling, Error> {
    let DataSource::Csv(trained) = &config.data.source else {
        unreachable!("a CSV regression run")
    };
    let raw = data::load_csv_regression(&unscaled(config), trained, config.run.seed)?;
    Ok(RowScaling::fit(&raw.train, features))
}

fn class_inputs(
    path: &Path,
    records: Vec<data::InputRow>,
    scaling: Option<FeatureScaling>,
    mut trained: data::Dataset,
) -> Result<Inputs, Error> {
    let classes = trained.classes;
    let labelled = records.iter().map(|(_, l)| l.is_some()).collect();
    let mut samples = Vec::with_capacity(records.len());
    for (row, (mut features, label)) in records.into_iter().enumerate() {
        if let Some(scaling) = &scaling {
            scaling.apply(&mut features);
        }
        // Unlabelled samples get class 0, which nothing reads: only labelled ones are scored.
        let label = label.map_or(0, |l| l as usize);
        if label >= classes {
            return Err(Error::Data(DataError::Unusable(format!(
                "{}: data row {}: label {label} is not one of the run's {classes} classes \
                 (0 to {})",
                path.display(),
                row + 1,
                classes - 1
            ))));
        }
        samples.push(Sample { features, label });
    }
    let n = samples.len();
    trained.train = Vec::new();
    trained.valid = samples;
    Ok(Inputs {
        loaded: Loaded::Classes(trained),
        labelled,
        ids: (0..n).collect(),
        readouts: Vec::new(),
    })
}

fn row_inputs(
    records: Vec<data::InputRow>,
    scaling: Option<RowScaling>,
    mut trained: data::RowData,
    name: &'static str,
) -> Inputs {
    let labelled = records.iter().map(|(_, t)| t.is_some()).collect();
    let (offset, scale) = scaling.as_ref().map_or((0.0, 1.0), |s| s.target);
    let rows: Vec<Row> = records
        .into_iter()
        .map(|(features, target)| {
            let mut row = Row {
                features,
                targets: vec![target.unwrap_or(0.0) as f32],
            };
            if let Some(scaling) = &scaling {
                scaling.apply(&mut row);
            }
            row
        })
        .collect();
    let n = rows.len();
    trained.train = Vec::new();
    trained.valid = rows;
    Inputs {
        loaded: Loaded::Rows(trained, name),
        labelled,
        ids: (0..n).collect(),
        readouts: vec![Readout { offset, scale }; n],
    }
}

/// Every window of `values` with `window` inputs, up to the one that ends at the last value
/// (whose forecast lies beyond the file): relative to its last input and scaled as training
/// scaled them. A window that touches a gap (with `data.gaps = "skip"`) is left out.
fn series_inputs(
    values: &[Option<f32>],
    series: &crate::config::SeriesConfig,
    mut trained: data::RowData,
    name: &'static str,
) -> Inputs {
    let (window, horizon, scale) = (series.window, series.horizon, trained.unit_scale);
    let (mut rows, mut labelled, mut ids, mut readouts) = (vec![], vec![], vec![], vec![]);
    for start in window..=values.len() {
        let past: Option<Vec<f32>> = values[start - window..start].iter().copied().collect();
        let Some(past) = past else { continue };
        let ahead: Option<Vec<f32>> = values
            .get(start..start + horizon)
            .and_then(|v| v.iter().copied().collect());
        let last = past[window - 1];
        // As training computes them: the change in f32, then scaled.
        let relative = |v: &f32| (f64::from(*v - last) / scale) as f32;
        rows.push(Row {
            features: past.iter().map(relative).collect(),
            targets: match &ahead {
                Some(ahead) => ahead.iter().map(relative).collect(),
                None => vec![0.0; horizon],
            },
        });
        labelled.push(ahead.is_some());
        ids.push(start);
        readouts.push(Readout {
            offset: f64::from(last),
            scale,
        });
    }
    trained.train = Vec::new();
    trained.valid = rows;
    Inputs {
        loaded: Loaded::Rows(trained, name),
        labelled,
        ids,
        readouts,
    }
}

/// The error for a file with no labels (or targets) to score against.
fn missing_labels(path: &Path, config: &RunConfig) -> Error {
    let (key, what) = match &config.data.source {
        DataSource::Series(s) => (
            "data.window",
            format!(
                "is too short for one window of {} values and the {} after it to score",
                s.window, s.horizon
            ),
        ),
        DataSource::Csv(c) if c.target_column.is_some() => (
            "data.target_column",
            "has no target column to score against (it has the features only)".to_string(),
        ),
        _ => (
            "data.label_column",
            "has no label column to score against (it has the features only)".to_string(),
        ),
    };
    Error::Data(DataError::Unusable(format!(
        "{}: {what}; evaluate needs the {key} the run was trained with, or use predict",
        path.display()
    )))
}
