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
    may_write(run_dir, data, out)?;
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

/// Refuses an `--out` that would replace what the predictions are made from: the `--data` file
/// itself, or a file of the run (its config, summary, snapshots, checkpoints). Inside the run's
/// directory a new file, or a `.csv` at its top (an earlier prediction), may be written.
fn may_write(run_dir: &Path, data: &Path, out: &Path) -> Result<(), Error> {
    let Some(target) = resolved(out) else {
        return Ok(());
    };
    let refuse = |why: String| {
        Err(crate::error::UsageError::new(format!("--out {}", out.display()), why).into())
    };
    if data.canonicalize().is_ok_and(|data| data == target) {
        return refuse(format!(
            "the file --data reads ({}); predictions never replace their input",
            data.display()
        ));
    }
    let Ok(run) = run_dir.canonicalize() else {
        return Ok(());
    };
    let Ok(within) = target.strip_prefix(&run) else {
        return Ok(());
    };
    let depth = within.components().count();
    let csv = within
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    if depth != 1 || (target.exists() && !csv) {
        let what = match depth {
            0 => "the run's directory itself".to_string(),
            _ => format!("{} is the run's own", within.display()),
        };
        return refuse(format!(
            "{what}; write predictions to a new file, or to a .csv at the top of {}",
            run_dir.display()
        ));
    }
    Ok(())
}

/// Where `path` leads once its links are followed: the file itself where it exists, else its
/// name in its resolved directory; `None` where the directory does not exist either.
fn resolved(path: &Path) -> Option<PathBuf> {
    if let Ok(path) = path.canonicalize() {
        return Some(path);
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    Some(parent.canonicalize().ok()?.join(path.file_name()?))
}
