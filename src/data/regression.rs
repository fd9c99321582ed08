//! Data for regression: rows of features and target values, from a CSV target column or from
//! windows of a time series.

use super::series;
use super::{load_csv_rows, moments, shuffle_for_split, DataError, Row, RowScaling};
use crate::config::{CsvConfig, DataConfig, GapPolicy, SeriesConfig};

/// Rows ready to train on, with how to read the model's errors.
#[derive(Debug, Clone)]
pub struct RowData {
    /// Training rows.
    pub train: Vec<Row>,
    /// Validation rows.
    pub valid: Vec<Row>,
    /// Features per row.
    pub features: usize,
    /// Targets per row.
    pub outputs: usize,
    /// One unit of a (scaled) target in the data's own units: errors times this are in the
    /// data's units.
    pub unit_scale: f64,
    /// What loading did that the user should know (gaps filled, windows dropped).
    pub notes: Vec<String>,
    /// Simple forecasts scored on the validation rows, to compare the model with.
    pub baselines: Vec<Baseline>,
}

/// A simple forecast's errors on the validation rows, in the data's units.
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    /// What it is, e.g. `seasonal_naive_52`.
    pub name: String,
    /// Mean absolute error.
    pub mae: f64,
    /// Root mean squared error.
    pub rmse: f64,
}

/// Regression rows from a CSV file's target column: shuffled with `seed`, `validation_fraction`
/// held out; with `standardize`, features and target scaled by the training split's mean and
/// standard deviation.
pub fn load_csv_regression(
    config: &DataConfig,
    csv: &CsvConfig,
    seed: u64,
) -> Result<RowData, DataError> {
    let (mut rows, features) = load_csv_rows(csv)?;
    let (_, n_valid) = shuffle_for_split(&mut rows, config.validation_fraction, seed)?;
    let valid = rows.split_off(rows.len() - n_valid);
    let mut data = RowData {
        train: rows,
        valid,
        features,
        outputs: 1,
        unit_scale: 1.0,
        notes: Vec::new(),
        baselines: Vec::new(),
    };
    if config.standardize() {
        let (mean, std) = standardize(&mut data, features);
        data.unit_scale = std;
        data.notes.push(format!(
            "data: target standardised with the training split's mean {mean:.4} and standard \
             deviation {std:.4}; errors are reported in the target's units"
        ));
    }
    let (mean, _) = moments(data.train.iter().map(|r| f64::from(r.targets[0])));
    let (mae, rmse) = errors(data.valid.iter().map(|r| f64::from(r.targets[0]) - mean));
    data.baselines.push(Baseline {
        name: "training_mean".into(),
        mae: mae * data.unit_scale,
        rmse: rmse * data.unit_scale,
    });
    Ok(data)
}

/// Scales every feature and the target to mean 0, standard deviation 1 with the training
/// split's statistics; returns the target's mean and standard deviation.
fn standardize(data: &mut RowData, features: usize) -> (f64, f64) {
    let scaling = RowScaling::fit(&data.train, features);
    for row in data.train.iter_mut().chain(data.valid.iter_mut()) {
        scaling.apply(row);
    }
    scaling.target
}

/// Forecasting rows from a series: each row's features are a window of past values and its
/// targets the next `horizon` values, both relative to the window's last value (so that the
/// model learns the change, not a level it may never have seen: a rising series leaves the
/// training range), and with `standardize` divided by the standard deviation of that change
/// on the training rows. The last values are held out; baselines are scored on them.
pub fn load_series_forecast(
    config: &DataConfig,
    series: &SeriesConfig,
) -> Result<RowData, DataError> {
    let loaded = series::load_series(&series.path, &series.column, series.header)?;
    let values = loaded.fill(series.gaps)?;
    let mut notes = Vec::new();
    if loaded.missing > 0 {
        notes.push(format!(
            "data: {} of {} values of {:?} are missing; data.gaps = \"{}\" {}",
            loaded.missing,
            loaded.values.len(),
            loaded.name,
            series.gaps.name(),
            match series.gaps {
                GapPolicy::Interpolate => "filled them linearly between their neighbours",
                GapPolicy::Previous => "filled them with the last value before them",
                _ => "dropped every window that touches one",
            }
        ));
    }
    let holdout = series.holdout.unwrap_or_else(|| {
        ((values.len() as f64 * config.validation_fraction).round() as usize).max(1)
    });
    let windows = series::windows(&values, series.window, series.horizon, holdout)?;
    let to_row = |w: &series::Window| {
        let last = *w.inputs.last().expect("a window has inputs");
        Row {
            features: w.inputs.iter().map(|v| v - last).collect(),
            targets: w.targets.iter().map(|v| v - last).collect(),
        }
    };
    let mut train: Vec<Row> = windows.train.iter().map(to_row).collect();
    let mut valid: Vec<Row> = windows.valid.iter().map(to_row).collect();
    let mut unit_scale = 1.0;
    if config.standardize() {
        let changes = train
            .iter()
            .flat_map(|r| r.targets.iter().map(|&t| f64::from(t)));
        unit_scale = moments(changes).1;
        for row in train.iter_mut().chain(valid.iter_mut()) {
            for v in row.features.iter_mut().chain(row.targets.iter_mut()) {
                *v = (f64::from(*v) / unit_scale) as f32;
            }
        }
    }
    let last = series::seasonal_naive(&values, &windows.valid, 1);
    let naive = series::seasonal_naive(&values, &windows.valid, series.season);
    let trend = series::linear_trend(&values, &windows.valid, windows.split);
    let mut scored = vec![("last_value".to_string(), last)];
    // Season 1 is the last value again.
    if series.season > 1 {
        scored.push((format!("seasonal_naive_{}", series.season), naive));
    }
    scored.push(("linear_trend".into(), trend));
    let mut baselines = Vec::new();
    for (name, e) in scored {
        // A baseline with nothing to forecast from (a season longer than the series before
        // the held-out values, a trend of fewer than two points) has no error to beat.
        if e.n == 0 {
            let season = match name.starts_with("seasonal_naive") {
                true => format!("data.season = {}, ", series.season),
                false => String::new(),
            };
            notes.push(format!(
                "data: the {name} baseline has no held-out value to forecast from \
                 ({season}{} values before them); it is left out",
                windows.split
            ));
            continue;
        }
        baselines.push(Baseline {
            name,
            mae: e.mae,
            rmse: e.rmse,
        });
    }
    notes.push(format!(
        "data: {} training and {} held-out windows of {} values; the last {holdout} values \
         are held out",
        train.len(),
        valid.len(),
        series.window
    ));
    Ok(RowData {
        train,
        valid,
        features: series.window,
        outputs: series.horizon,
        unit_scale,
        notes,
        baselines,
    })
}

/// Mean absolute and root mean squared value of `errors`.
fn errors(errors: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut abs, mut sq, mut n) = (0.0, 0.0, 0usize);
    for e in errors {
        abs += e.abs();
        sq += e * e;
        n += 1;
    }
    let n = n.max(1) as f64;
    (abs / n, (sq / n).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ConfigBuilder, DataSource, GapPolicy};

    fn co2(edit: impl FnOnce(ConfigBuilder) -> ConfigBuilder) -> (DataConfig, SeriesConfig) {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/co2-weekly.csv");
        let builder = ConfigBuilder::new("co2")
            .series(path, 52)
            .holdout(208)
            .season(52);
        let data = edit(builder).build().unwrap().data;
        let DataSource::Series(series) = data.source.clone() else {
            unreachable!()
        };
        (data, series)
    }

    #[test]
    fn co2_windows_are_relative_to_their_last_value_and_baselines_are_in_ppm() {
        let (data, series) = co2(|b| b);
        let rows = load_series_forecast(&data, &series).unwrap();
        assert_eq!((rows.train.len(), rows.valid.len()), (2024, 208));
        assert_eq!((rows.features, rows.outputs), (52, 1));
        assert!(rows.train.iter().all(|r| r.features[51] == 0.0));
        // The change from one week to the next: a fraction of a ppm, scaled to about 1.
        assert!((0.2..2.0).contains(&rows.unit_scale), "{}", rows.unit_scale);
        let naive = &rows.baselines[1];
        assert_eq!(naive.name, "seasonal_naive_52");
        assert!((naive.rmse - 2.0084).abs() < 1e-3, "{naive:?}");
        assert!((rows.baselines[2].rmse - 4.2793).abs() < 1e-3);
        assert_eq!(rows.baselines[0].name, "last_value");
        assert!(
            rows.notes[0].contains("59 of 2284 values"),
            "{:?}",
            rows.notes
        );
        let (data, series) = co2(|b| b.gaps(GapPolicy::None));
        let err = load_series_forecast(&data, &series)
            .unwrap_err()
            .to_string();
        assert!(err.contains("co2-weekly.csv:8:"), "{err}");
    }

    #[test]
    fn a_csv_target_is_standardised_and_its_errors_come_back_in_its_units() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.csv");
        let text: String = (0..100)
            .map(|i| format!("{},{}\n", i, 1000.0 + 10.0 * i as f64))
            .collect();
        std::fs::write(&path, format!("x,y\n{text}")).unwrap();
        let data = crate::config::ConfigBuilder::new("r")
            .csv(&path)
            .target_column(crate::config::Column::Name("y".into()))
            .build()
            .unwrap()
            .data;
        let DataSource::Csv(csv) = data.source.clone() else {
            unreachable!()
        };
        let rows = load_csv_regression(&data, &csv, 1).unwrap();
        assert_eq!(
            (rows.train.len(), rows.valid.len(), rows.features),
            (80, 20, 1)
        );
        // y = 1000 + 10 x over x in 0..100: the training split's std is about 289.
        assert!(
            (250.0..330.0).contains(&rows.unit_scale),
            "{}",
            rows.unit_scale
        );
        let mean = rows.train.iter().map(|r| r.targets[0]).sum::<f32>() / 80.0;
        assert!(mean.abs() < 1e-4);
        assert_eq!(rows.baselines[0].name, "training_mean");
        assert!(
            rows.baselines[0].mae > 100.0,
            "in y's units: {:?}",
            rows.baselines
        );
    }
}
