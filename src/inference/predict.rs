//! `tidemark predict`: a finished run's outputs for every input of a file, as CSV: the class
//! and its probabilities for classification, the value for regression, the next `horizon`
//! values for a series.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use burn::tensor::activation::softmax;
use burn::tensor::Tensor;

use super::Trained;
use crate::builtin::{self, Inputs, Readout, Visit};
use crate::config::DataSource;
use crate::error::Error;
use crate::model::Network;
use crate::record::write_atomic;
use crate::task::score::items;
use crate::task::{Classify, Regress, Task};

/// What `predict` wrote.
#[derive(Debug, Clone)]
pub struct Predictions {
    /// The CSV file.
    pub out: PathBuf,
    /// Its data rows: one per input.
    pub rows: usize,
    /// Its header.
    pub columns: Vec<String>,
}

/// Writes `run`'s outputs for every input of `data` (a file laid out like the run's own data;
/// the label or target column may be left out) to the CSV file `out`:
///
/// - classification: `row,class,p_0,…,p_{k-1}`: the data row (0-based), the most probable
///   class and every class's probability;
/// - regression: `row,prediction`, in the target's units;
/// - a series: `index,forecast_1,…,forecast_h`: the index in the series of the first value
///   forecast (the series' length for the forecast beyond its end), then the `horizon` values.
pub fn predict(run: &Trained, data: &Path, out: &Path) -> Result<Predictions, Error> {
    let inputs = builtin::inputs(&run.config, data)?;
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
    let (columns, text) = builtin::visit(&run.config, loaded, writer)?;
    write_atomic(out, text.as_bytes()).map_err(|e| Error::io(out, e))?;
    Ok(Predictions {
        out: out.to_path_buf(),
        rows: text.lines().count() - 1,
        columns,
    })
}

/// Runs the model over the task's validation items (the file's) and writes the CSV text.
struct Writer<'a> {
    run: &'a Trained,
    ids: Vec<usize>,
    readouts: Vec<Readout>,
    series: bool,
}

/// A CSV header and its text.
type Csv = (Vec<String>, String);

impl Writer<'_> {
    /// The model's outputs for every item, one row each.
    fn outputs<T: Task>(
        &self,
        task: &T,
        forward: impl Fn(&T::Model, T::Batch) -> Tensor<2>,
    ) -> Result<Vec<Vec<f32>>, Error> {
        let model = self.run.model(|device| task.model(device))?;
        let items = match task.data().valid {
            Some(valid) => items(valid.as_ref(), 0..valid.len())?,
            None => Vec::new(),
        };
        let mut rows = Vec::with_capacity(items.len());
        for chunk in items.chunks(self.run.batch_size().max(1)) {
            let batch = task.batcher().batch(chunk.to_vec(), &self.run.device);
            let output = forward(&model, batch);
            let [n, width] = output.dims();
            let data = output.try_into_data().map_err(Error::device)?;
            let values: Vec<f32> = data.convert::<f32>().iter::<f32>().collect();
            rows.extend((0..n).map(|i| values[i * width..(i + 1) * width].to_vec()));
        }
        Ok(rows)
    }
}

impl Visit for Writer<'_> {
    type Output = Csv;

    fn classify<N: Network>(self, task: Classify<N>) -> Result<Csv, Error> {
        let rows = self.outputs(&task, |model, batch| {
            softmax(model.forward(batch.inputs), 1)
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
        let rows = self.outputs(&task, |model, batch| model.forward(batch.inputs))?;
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
