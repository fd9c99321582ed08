//! `tidemark train`: a run trained (or resumed) with the terminal's progress, and its outcome
//! in one line on stdout.

use std::path::{Path, PathBuf};

use super::lr_find::said;
use super::terminal::{fmt_opt, Terminal};
use super::{config_path, load_config, out_override};
use crate::config::{ConfigError, Override, RunConfig};
use crate::kinds::Kinds;
use crate::memory::format_bytes;
use crate::report::format_metric;
use crate::train::lr_find::find;
use crate::train::lr_find::rule::Sweep;
use crate::{Error, Trainer};

/// `tidemark train`: trains (or resumes) and prints the run's one-line outcome.
pub(super) fn train(
    kinds: &Kinds,
    config: Option<PathBuf>,
    overrides: &[String],
    resume: Option<PathBuf>,
    out: Option<PathBuf>,
    quiet: bool,
) -> Result<(), Error> {
    let path = config_path(config, resume.as_deref())?;
    let find = resume.is_none() && asks_for_finder(&path, overrides)?;
    let mut extra = out_override(out)?;
    if find {
        // Checked at any rate first; the finder's rate replaces it.
        extra.push(rate(crate::config::defaults::LR));
    }
    let mut resolved = load_config(kinds, &path, overrides, extra)?;
    if find {
        resolved = found_rate(kinds, resolved, &path, quiet)?;
    }
    let mut trainer = Trainer::new(resolved).observer(Terminal::new(quiet));
    if let Some(run_dir) = resume {
        trainer = trainer.resume(run_dir);
    }
    let summary = kinds.train(trainer)?;
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

/// Whether the config (with `overrides`) says `train.lr = "find"`.
fn asks_for_finder(path: &Path, overrides: &[String]) -> Result<bool, Error> {
    let overrides = (overrides.iter())
        .map(|o| Override::parse(o))
        .collect::<Result<Vec<_>, _>>()?;
    let raw = crate::config::load_raw(path, &overrides)?.raw;
    Ok(raw.train.lr.is_some_and(|lr| lr.is_find()))
}

/// `train.lr = <lr>`, as an override.
fn rate(lr: f64) -> Override {
    Override {
        key: "train.lr".into(),
        value: toml::Value::Float(lr),
        text: format!("train.lr={lr:?}"),
    }
}

/// `resolved` with the rate the finder suggests on it, checked again at that rate; the run's
/// `config.toml` then records it.
fn found_rate(
    kinds: &Kinds,
    resolved: RunConfig,
    path: &Path,
    quiet: bool,
) -> Result<RunConfig, Error> {
    let observer = Box::new(Terminal::new(quiet));
    let found = find(&resolved, Sweep::default(), observer, |t| kinds.train(t))?;
    eprintln!("{}", said(&found));
    let Some(lr) = found.lr() else {
        return Err(Error::Config(ConfigError {
            origin: path.display().to_string(),
            key: Some("train.lr".into()),
            message: "train.lr = \"find\": the finder made no suggestion (see lr-find.svg); \
                      give a rate"
                .into(),
        }));
    };
    let text = crate::config::to_toml(&resolved);
    let name = path.display().to_string();
    Ok(crate::config::parse_checked(
        &text,
        &name,
        &[rate(lr)],
        &|c| kinds.check(c),
    )?)
}

/// The final validation metrics (`, val accuracy 85.3%`), with the baselines to read them
/// against.
fn outcome(summary: &crate::record::RunSummary) -> String {
    let mut text = String::new();
    for (key, value) in &summary.final_metrics {
        if let Some(name) = key.strip_prefix("final_val_") {
            text += &format!(", val {name} {}", format_metric(name, *value));
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
    let ends_on_best =
        summary.checkpoint.is_some() && summary.checkpoint == summary.best_checkpoint;
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
