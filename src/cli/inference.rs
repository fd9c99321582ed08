//! `tidemark evaluate` and `tidemark predict`: a finished run's model used on data.

use std::path::{Path, PathBuf};

use crate::inference::Trained;
use crate::kinds::Kinds;
use crate::report::format_metric;
use crate::Error;

/// Scores the run and prints its figures.
pub(super) fn evaluate(
    kinds: &Kinds,
    run_dir: &Path,
    data: Option<PathBuf>,
    checkpoint: Option<String>,
) -> Result<(), Error> {
    let run = Trained::open(run_dir, checkpoint.as_deref())?;
    let evaluation = kinds.evaluate(&run, data.as_deref())?;
    let score = &evaluation.score;
    let mut figures = format!("loss {:.4}", score.loss);
    for (name, value) in &score.metrics {
        figures += &format!(", {name} {}", format_metric(name, *value));
    }
    outln!(
        "evaluate: {} (checkpoints/{}) on {}, {} samples: {figures}",
        run_dir.display(),
        evaluation.checkpoint,
        evaluation.source(),
        score.samples,
    );
    outln!("wrote {}", run_dir.join("evaluation.json").display());
    Ok(())
}

/// Writes the run's outputs for every input and says where.
pub(super) fn predict(
    kinds: &Kinds,
    run_dir: &Path,
    data: &Path,
    out: &Path,
    checkpoint: Option<String>,
) -> Result<(), Error> {
    let run = Trained::open(run_dir, checkpoint.as_deref())?;
    let predictions = kinds.predict(&run, data, out)?;
    outln!(
        "predict: {} (checkpoints/{}) on {}: {} rows ({}) in {}",
        run_dir.display(),
        run.checkpoint_name,
        data.display(),
        predictions.rows,
        predictions.columns.join(","),
        predictions.out.display()
    );
    Ok(())
}
