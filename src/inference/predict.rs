//! `tidemark predict`: a finished run's outputs for every input of a file, as CSV, written; the
//! model kind's code says what the outputs are.

use std::path::{Path, PathBuf};

use burn::tensor::Tensor;

use super::Trained;
use crate::error::Error;
use crate::record::write_atomic;
use crate::task::score::items;
use crate::task::Task;

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

/// Writes `csv` (a header and its text) to the file `out`.
pub(crate) fn write_predictions(out: &Path, (columns, text): Csv) -> Result<Predictions, Error> {
    write_atomic(out, text.as_bytes()).map_err(|e| Error::io(out, e))?;
    Ok(Predictions {
        out: out.to_path_buf(),
        rows: text.lines().count() - 1,
        columns,
    })
}

/// A CSV header and its text.
pub(crate) type Csv = (Vec<String>, String);

/// The model's outputs (`forward`, from a batch) for every validation item of `task` (the
/// file's items, where the task was built from one), one row each, with `run`'s weights.
pub(crate) fn outputs<T: Task>(
    run: &Trained,
    task: &T,
    forward: impl Fn(&T::Model, T::Batch) -> Result<Tensor<2>, Error>,
) -> Result<Vec<Vec<f32>>, Error> {
    let model = run.model(|device| task.model(device))?;
    let items = match task.data().valid {
        Some(valid) => items(valid.as_ref(), 0..valid.len())?,
        None => Vec::new(),
    };
    let mut rows = Vec::with_capacity(items.len());
    for chunk in items.chunks(run.batch_size().max(1)) {
        let batch = task.batcher().batch(chunk.to_vec(), &run.device);
        let output = forward(&model, batch)?;
        let [n, width] = output.dims();
        let data = output.try_into_data().map_err(Error::device)?;
        let values: Vec<f32> = data.convert::<f32>().iter::<f32>().collect();
        rows.extend((0..n).map(|i| values[i * width..(i + 1) * width].to_vec()));
    }
    Ok(rows)
}
