//! `predict` for the built-in kinds, as CSV: the class and its probabilities for
//! classification, the value for regression, the next `horizon` values for a series.

use std::fmt::Write as _;
use std::path::Path;

use burn::tensor::activation::softmax;

use super::inputs::{Inputs, Readout};
use super::{visit, Builtin, Visit};
use crate::config::DataSource;
use crate::error::Error;
use crate::inference::{outputs, Csv, Trained};
use crate::model::Network;
use crate::task::{Classify, Regress};

/// `run`'s outputs for every input of `data` (a file laid out like the run's own data; the
/// label or target column may be left out), as a CSV:
///
/// - classification: `row,class,p_0,…,p_{k-1}`: the data row (0-based), the most probable
///   class and every class's probability;
/// - regression: `row,prediction`, in the target's units;
/// - a series: `index,forecast_1,…,forecast_h`: the index in the series of the first value
///   forecast (the series' length for the forecast beyond its end), then the `horizon` values.
pub(super) fn predict<N: Builtin>(
    run: &Trained,
    data: &Path,
    settings: N::Settings,
) -> Result<Csv, Error> {
    let inputs = super::inputs::inputs(&run.config, data)?;
    let series = matches!(run.config.data.source, DataSource::Series(_));
    let Inputs {
        loaded,
        ids,
        readouts,
        ..
    } = inputs;
    let writer = Writer {
        run,
        ids,
        readouts,
        series,
    };
    visit::<N, _>(settings, loaded, writer)
}

/// Runs the model over the task's validation items (the file's) and writes the CSV text.
struct Writer<'a> {
    run: &'a Trained,
    ids: Vec<usize>,
    readouts: Vec<Readout>,
    series: bool,
}

impl Visit for Writer<'_> {
    type Output = Csv;

    fn classify<N: Network>(self, task: Classify<N>) -> Result<Csv, Error> {
        let rows = outputs(self.run, &task, |model, batch| {
            Ok(softmax(model.forward(batch.inputs), 1))
        })?;
        let classes = rows.first().map_or(0, Vec::len);
        let mut columns = vec!["row".to_string(), "class".to_string()];
        columns.extend((0..classes).map(|c| format!("p_{c}")));
        let mut text = columns.join(",") + "\n";
        for (id, p) in self.ids.iter().zip(&rows) {
            let class = (0..p.len()).fold(0, |best, c| if p[c] > p[best] { c } else { best });
            let _ = write!(text, "{id},{class}");
            for v in p {
                let _ = write!(text, ",{v:.6}");
            }
            text.push('\n');
        }
        Ok((columns, text))
    }

    fn regress<N: Network>(self, task: Regress<N>) -> Result<Csv, Error> {
        let rows = outputs(self.run, &task, |model, batch| {
            Ok(model.forward(batch.inputs))
        })?;
        let width = rows.first().map_or(0, Vec::len);
        let mut columns = match self.series {
            true => vec!["index".to_string()],
            false => vec!["row".to_string()],
        };
        match self.series {
            true => columns.extend((1..=width).map(|h| format!("forecast_{h}"))),
            false => columns.push("prediction".into()),
        }
        let mut text = columns.join(",") + "\n";
        for ((id, readout), values) in self.ids.iter().zip(&self.readouts).zip(&rows) {
            let _ = write!(text, "{id}");
            for &y in values {
                let _ = write!(text, ",{}", readout.value(y) as f32);
            }
            text.push('\n');
        }
        Ok((columns, text))
    }
}
