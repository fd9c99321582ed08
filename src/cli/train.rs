//! `tidemark train`: a run trained (or resumed) with the terminal's progress, and its outcome
//! in one line on stdout.

use std::path::PathBuf;

use super::terminal::{fmt_opt, Terminal};
use super::{config_path, load_config, out_override};
use crate::kinds::Kinds;
use crate::memory::format_bytes;
use crate::report::format_metric;
use crate::{Error, Trainer};

/// `tidemark train`: trains (or resumes) and prints the run's one-line outcome.
pub(super) fn train(
    kinds: &Kinds,
    config: Option<PathBuf>,
    overrides: &[String],
    (resume, retune): (Option<PathBuf>, bool),
    out: Option<PathBuf>,
    quiet: bool,
) -> Result<(), Error> {
    let path = config_path(config, resume.as_deref())?;
    // `train.lr = "find"`: the trainer runs the finder first, and trains at its rate.
    let resolved = load_config(kinds, &path, overrides, out_override(out)?)?;
    // Ctrl-C or SIGTERM stops the run at the end of its step, with a checkpoint there.
    let stop = crate::sweep::signals::StopOnSignal::install()?;
    // One process trains a run at a time: a second resume of it is refused.
    let mut trainer = (Trainer::new(resolved).observer(Terminal::new(quiet)))
        .stop_when(stop.shared())
        .exclusive();
    if let Some(run_dir) = &resume {
        trainer = trainer.resume(run_dir);
    }
    if retune {
        trainer = trainer.retune();
    }
    let trained = kinds.train(trainer);
    drop(stop);
    let summary = match trained {
        Err(Error::Interrupted) => return Err(Error::RunStopped { run_dir: resume }),
        other => other?,
    };
    outln!(
        "{}: {} epochs, {} steps in {:.1}s; loss {} -> {}{}, peak {} in use, {} reserved ({}); {}",
        summary.name,
        summary.epochs,
        summary.steps,
        summary.wall_time_s,
        fmt_opt(summary.first_loss, 4),
        fmt_opt(summary.final_loss, 4),
        outcome(&summary),
        format_bytes(summary.peak_bytes_in_use),
        format_bytes(summary.peak_bytes_reserved),
        summary.memory_source,
        summary.run_dir.display(),
    );
    if !summary.best_checkpoints.is_empty() {
        let kept: Vec<String> = (summary.best_checkpoints.iter().enumerate())
            .map(|(i, r)| format!("best-{} {} ({:.4})", i + 1, r.name, r.value))
            .collect();
        outln!("kept: {}; evaluate --checkpoint best-N", kept.join(", "));
    }
    Ok(())
}

/// The final validation metrics (`, val accuracy 85.3%`), with the baselines to read them
/// against.
fn outcome(summary: &crate::record::RunSummary) -> String {
    let mut text = String::new();
    let ends_on_best =
        summary.checkpoint.is_some() && summary.checkpoint == summary.best_checkpoint;
    // The figures are the last epoch's: said so where the run ends on another epoch's weights.
    let val = match ends_on_best && summary.best_epoch != Some(summary.epochs) {
        true => format!("epoch {}'s val", summary.epochs),
        false => "val".to_string(),
    };
    for (key, value) in &summary.final_metrics {
        if let Some(name) = key.strip_prefix("final_val_") {
            text += &format!(", {val} {name} {}", format_metric(name, *value));
        }
    }
    let baselines: Vec<String> = summary
        .baselines
        .iter()
        .map(|(name, metrics)| {
            let figures: Vec<String> = metrics
                .iter()
                .map(|(k, v)| format!("{k} {}", format_metric(k, *v)))
                .collect();
            format!("{name} {}", figures.join(" "))
        })
        .collect();
    if !baselines.is_empty() {
        text += &format!(" (baselines: {})", baselines.join(", "));
    }
    if let (Some(epoch), Some(monitor), Some(value)) =
        (summary.best_epoch, &summary.monitor, summary.best_value)
    {
        let stopped = if summary.stopped_early {
            "stopped early; "
        } else {
            ""
        };
        let weights = if ends_on_best {
            ", whose weights it ends on"
        } else {
            ""
        };
        text += &format!(" ({stopped}best epoch {epoch}, {monitor} {value:.4}{weights})");
    }
    text
}
