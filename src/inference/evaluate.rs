//! `tidemark evaluate`: a finished run's model scored on its validation split or on a file
//! (the task its model kind builds), written to `evaluation.json`.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Trained;
use crate::error::Error;
use crate::record::write_atomic;
use crate::task::{Score, Task};

/// A run's model scored on some data.
#[derive(Debug, Clone, Serialize)]
pub struct Evaluation {
    /// The run directory.
    pub run_dir: PathBuf,
    /// The checkpoint whose weights were scored (`epoch-3`).
    pub checkpoint: String,
    /// The file scored, or `None` for the run's own validation split.
    pub data: Option<PathBuf>,
    /// The loss and the task's metrics.
    #[serde(flatten)]
    pub score: Score,
}

impl Evaluation {
    /// What was scored, in words: the file, or `validation split`.
    pub fn source(&self) -> String {
        match &self.data {
            Some(path) => path.display().to_string(),
            None => "validation split".into(),
        }
    }
}

/// Scores the model a run of `task`, a task defined in code, left in `run_dir` (its final
/// weights, as `tidemark evaluate` takes them) on the task's validation split, and writes
/// `<run_dir>/evaluation.json`: one call, where a task built from a config has the CLI.
pub fn evaluate_task<T: Task>(run_dir: &Path, task: T) -> Result<Evaluation, Error> {
    let run = Trained::open_run(run_dir, None, true)?;
    let score = score(&run, task)?;
    record_evaluation(&run, None, score)
}

/// The evaluation of `run` on `data` (its validation split without): `score`, written to
/// `<run_dir>/evaluation.json`.
pub(crate) fn record_evaluation(
    run: &Trained,
    data: Option<&Path>,
    score: Score,
) -> Result<Evaluation, Error> {
    let evaluation = Evaluation {
        run_dir: run.run_dir.clone(),
        checkpoint: run.checkpoint_name.clone(),
        data: data.map(Path::to_path_buf),
        score,
    };
    let path = run.run_dir.join("evaluation.json");
    let json = serde_json::to_vec_pretty(&evaluation).expect("an evaluation serialises");
    write_atomic(&path, &json).map_err(|e| Error::io(&path, e))?;
    Ok(evaluation)
}

/// `task`'s validation items (a file's, where the task was built from one) scored with `run`'s
/// weights.
pub(crate) fn score<T: Task>(run: &Trained, task: T) -> Result<Score, Error> {
    let model = run.model(|device| task.model(device))?;
    let Some(valid) = task.data().valid else {
        return Err(Error::Data(crate::data::DataError::Unusable(
            "there is nothing to score: the data has no validation items".into(),
        )));
    };
    crate::task::evaluate(&task, &model, valid.as_ref(), run.batch_size(), &run.device)
}
