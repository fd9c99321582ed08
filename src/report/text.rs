//! `tidemark report RUN_DIR`: redraws `memory.svg` from a run's files, read by the caller, and
//! describes the run in a few lines. Works on a run that died: only `snapshots.jsonl` is
//! required.

use std::fmt::Write as _;
use std::path::Path;

use super::{render_memory_svg, PictureOf, ReportError};
use crate::memory::Action;
use crate::memory::{format_bytes, format_signed_bytes};
use crate::record::{check_growth, current_epochs, Event, Snapshot, SnapshotLog};
use crate::record::{RunStatus, RunSummary};

/// Redraws `<run_dir>/memory.svg` from the run's snapshots (`log`, read from `path`) and its
/// summary (`None`: the process was killed; the snapshots are enough), and returns a text
/// summary of the run.
pub fn report(
    run_dir: &Path,
    (path, log): (&Path, SnapshotLog),
    summary: Option<RunSummary>,
) -> Result<String, ReportError> {
    let SnapshotLog {
        snapshots,
        cut_line,
    } = log;
    let name = summary.as_ref().map_or_else(
        || {
            run_dir
                .file_name()
                .map_or("run".into(), |n| n.to_string_lossy().into_owned())
        },
        |s| s.name.clone(),
    );
    let svg = run_dir.join("memory.svg");
    let of = PictureOf {
        title: &name,
        limit: summary.as_ref().and_then(|s| s.limit_bytes),
        monitor: summary.as_ref().and_then(|s| s.monitor.as_deref()),
    };
    render_memory_svg(&snapshots, of, &svg)?;
    let epochs = current_epochs(&snapshots);
    let mut out = outcome(run_dir, &name, summary.as_ref(), &epochs);
    if let Some(line) = cut_line {
        // A killed run is when a report is wanted most: say what was left out, and go on.
        let _ = writeln!(
            out,
            "note: {}:{line}: the last line is cut off (the run was killed while writing it); \
             left out",
            path.display()
        );
    }
    out += &epoch_table(&epochs);
    out += &peak_breakdown(&epochs);
    if let Some(advice) = summary.as_ref().and_then(|s| s.advice.as_ref()) {
        out += &advice.table();
    }
    out += &events(&snapshots);
    out += &growth(&epochs);
    let _ = writeln!(out, "wrote {}", svg.display());
    Ok(out)
}

/// The run's status, and its epochs, steps, losses and last metrics.
fn outcome(
    run_dir: &Path,
    name: &str,
    summary: Option<&RunSummary>,
    epochs: &[&Snapshot],
) -> String {
    let mut out = String::new();
    let status = match summary.map(|s| &s.status) {
        Some(RunStatus::Completed) => "completed".to_string(),
        Some(RunStatus::Failed(e)) => format!("failed: {e}"),
        Some(RunStatus::Paused) => "paused by a search's pruner (resumable)".to_string(),
        Some(RunStatus::Pruned) => format!(
            "pruned: {}",
            summary
                .and_then(|s| s.stopped_by.as_deref())
                .unwrap_or("by a search")
        ),
        None => "no summary.json (the run did not finish)".to_string(),
    };
    let _ = writeln!(out, "run {name} ({}): {status}", run_dir.display());
    if let (Some(first), Some(last)) = (epochs.first(), epochs.last()) {
        let _ = writeln!(
            out,
            "{} epochs, {} steps; loss {} -> {}{}",
            last.epoch,
            last.step,
            first.loss.map_or("-".into(), |l| format!("{l:.4}")),
            last.loss.map_or("-".into(), |l| format!("{l:.4}")),
            last.metrics
                .iter()
                .filter_map(|(k, v)| Some(format!(
                    "; {} {}",
                    k.replacen('_', " ", 1),
                    format_metric(k, (*v)?)
                )))
                .collect::<String>(),
        );
    }
    out
}

/// In use, peak and reserved per epoch.
fn epoch_table(epochs: &[&Snapshot]) -> String {
    let mut out = format!(
        "{:>6}  {:>11}  {:>11}  {:>11}\n",
        "epoch", "in use", "peak", "reserved"
    );
    for s in epochs {
        let _ = writeln!(
            out,
            "{:>6}  {:>11}  {:>11}  {:>11}",
            s.epoch,
            format_bytes(s.memory.bytes_in_use),
            format_bytes(s.memory.peak_bytes_in_use),
            format_bytes(s.memory.bytes_reserved)
        );
    }
    out
}

/// Resumes, memory actions, and what the run kept after release.
fn events(snapshots: &[Snapshot]) -> String {
    let mut out = String::new();
    for s in snapshots.iter().filter(|s| s.event == Event::Resume) {
        let detail = s.detail.as_deref().unwrap_or("resumed");
        let _ = writeln!(out, "resume (after epoch {}): {detail}", s.epoch);
    }
    for s in snapshots.iter().filter(|s| s.event == Event::MemoryAction) {
        let _ = writeln!(
            out,
            "memory {} (epoch {}): {}",
            s.action.map_or("action", Action::name),
            s.epoch,
            s.detail.as_deref().unwrap_or("")
        );
    }
    if let Some(r) = snapshots.iter().rev().find_map(|s| s.retained) {
        let _ = writeln!(
            out,
            "after release: {} in use, {} reserved against the pre-run baseline",
            format_signed_bytes(r.retained_bytes_in_use),
            format_signed_bytes(r.retained_bytes_reserved)
        );
    }
    out
}

/// The growth alarm's verdict on the epochs' in-use figures.
fn growth(epochs: &[&Snapshot]) -> String {
    let in_use: Vec<u64> = epochs.iter().map(|s| s.memory.bytes_in_use).collect();
    match check_growth(&in_use) {
        Some(alarm) => format!(
            "growth alarm: in use rose every epoch, about {} per epoch (raised at epoch {})\n",
            format_bytes(alarm.slope_bytes_per_epoch.max(0.0) as u64),
            alarm.epoch
        ),
        None => "growth alarm: none\n".to_string(),
    }
}

/// `peak of epoch 2 (91.0 MiB) by category: ...` for the epoch with the highest peak, if the
/// snapshots have a breakdown.
fn peak_breakdown(epochs: &[&Snapshot]) -> String {
    let peak = epochs
        .iter()
        .filter(|s| s.breakdown.is_some())
        .max_by_key(|s| s.memory.peak_bytes_in_use);
    let Some((s, breakdown)) = peak.and_then(|s| Some((s, s.breakdown.as_ref()?))) else {
        return String::new();
    };
    format!(
        "peak of epoch {} ({}) by category: {breakdown}\n",
        s.epoch,
        format_bytes(s.memory.peak_bytes_in_use)
    )
}

/// A metric as people read it: accuracies as percentages, everything else with four digits
/// (in scientific notation from 10^6 up, a diverged loss's `3.4066e14`).
pub fn format_metric(key: &str, value: f64) -> String {
    if key.ends_with("accuracy") {
        format!("{:.1}%", value * 100.0)
    } else {
        four_digits(value)
    }
}

/// Four decimals, or four in scientific notation from 10^6 up: a figure in a table's column.
pub(crate) fn four_digits(value: f64) -> String {
    match value.abs() >= 1e6 {
        true => format!("{value:.4e}"),
        false => format!("{value:.4}"),
    }
}

/// A value on a picture's axis: three decimals, or scientific notation where that would be
/// long (from 10^4 up) or show nothing (below 10^-3), so that a label fits beside its axis.
pub(crate) fn axis_label(value: f64) -> String {
    let size = value.abs();
    if size >= 1e4 || (size > 0.0 && size < 1e-3) {
        format!("{value:.2e}")
    } else {
        format!("{value:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::{axis_label, format_metric};

    #[test]
    fn a_huge_or_tiny_figure_is_written_so_that_it_fits_its_place() {
        assert_eq!(format_metric("val_loss", 0.43217), "0.4322");
        assert_eq!(format_metric("val_accuracy", 0.8567), "85.7%");
        // A diverged trial's loss, which the table printed as 340660205870120.9375.
        assert_eq!(format_metric("val_loss", 340660205870120.94), "3.4066e14");
        assert_eq!(axis_label(0.0), "0.000");
        assert_eq!(axis_label(1.25), "1.250");
        assert_eq!(axis_label(6e14), "6.00e14");
        assert_eq!(axis_label(-2e-4), "-2.00e-4");
    }
}
