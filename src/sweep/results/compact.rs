//! A search's end on a terminal: the best few trials in a table that fits the terminal's width
//! (their varied values to 3 significant digits, the monitored value), the trials' statuses
//! counted, and where the full table is. Piped, a search prints the full ranking instead,
//! which scripts read; `sweep.md` always has it.

use std::fmt::Write as _;
use std::path::Path;

use super::rank::{TrialRow, TrialStatus};
use crate::config::MonitorMode;
use crate::sweep::space::rounded;

/// The trials shown.
const SHOWN: usize = 5;
/// The widest a cell gets (a long categorical value is cut).
const MAX_CELL: usize = 40;

/// The compact ranking of `rows` (ranked), by `monitor`, for a terminal `width` columns wide;
/// `dir` is the sweep directory. No line is longer than `width`.
pub fn compact(
    rows: &[TrialRow],
    (monitor, mode): (&str, MonitorMode),
    dir: &Path,
    width: usize,
) -> String {
    let better = mode.meaning();
    let best: Vec<&TrialRow> = (rows.iter())
        .filter(|r| r.rank.is_some())
        .take(SHOWN)
        .collect();
    let mut out = String::new();
    let head = format!(
        "Best {} of {} trials by {monitor} ({better}):",
        best.len(),
        rows.len()
    );
    let _ = writeln!(out, "{}", fit(&head, width));
    if !best.is_empty() {
        out.push_str(&table(&best, monitor, width));
    }
    let _ = writeln!(out, "{}", fit(&counts(rows), width));
    let full = format!("the full table: {}", dir.join("sweep.md").display());
    let _ = writeln!(out, "{}", fit(&full, width));
    out
}

/// The table of the `best` rows: rank, trial, the monitor, then as many varied keys as fit.
fn table(best: &[&TrialRow], monitor: &str, width: usize) -> String {
    let keys: Vec<&String> = best[0].values.keys().collect();
    let mut columns: Vec<Vec<String>> = vec![
        column("#", best.iter().map(|r| r.rank.unwrap_or(0).to_string())),
        column("trial", best.iter().map(|r| r.name.clone())),
        column(
            monitor,
            best.iter()
                .map(|r| crate::report::four_digits(r.monitored.unwrap_or(f64::NAN))),
        ),
    ];
    for key in &keys {
        let cells = best
            .iter()
            .map(|r| r.values.get(*key).map_or("-".into(), |v| rounded(v, 3)));
        columns.push(column(key, cells));
    }
    let used =
        |columns: &[Vec<String>]| -> usize { columns.iter().map(|c| widest(c) + 2).sum::<usize>() };
    // Keys that do not fit are left out, the last first; the note names them.
    let mut left_out = Vec::new();
    while columns.len() > 3 && used(&columns) > width {
        left_out.insert(0, columns.pop().expect("a key's column")[0].clone());
    }
    let mut out = String::new();
    for line in 0..=best.len() {
        let cells: Vec<String> = (columns.iter())
            .map(|c| format!("{:<w$}", c[line], w = widest(c)))
            .collect();
        let _ = writeln!(out, "{}", fit(cells.join("  ").trim_end(), width));
    }
    if !left_out.is_empty() {
        let note = format!("(not shown here: {}; in sweep.md)", left_out.join(", "));
        let _ = writeln!(out, "{}", fit(&note, width));
    }
    out
}

/// A column: its header, then a cell per row, none wider than [`MAX_CELL`].
fn column(header: &str, cells: impl Iterator<Item = String>) -> Vec<String> {
    std::iter::once(header.to_string())
        .chain(cells)
        .map(|c| fit(&c, MAX_CELL))
        .collect()
}

fn widest(column: &[String]) -> usize {
    (column.iter())
        .map(|c| console::measure_text_width(c))
        .max()
        .unwrap_or(0)
}

/// `40 trials: 38 completed, 2 failed`, the statuses there are.
fn counts(rows: &[TrialRow]) -> String {
    let statuses = [
        TrialStatus::Completed,
        TrialStatus::Pruned,
        TrialStatus::Failed,
        TrialStatus::Paused,
        TrialStatus::Running,
        TrialStatus::NotRun,
    ];
    let counted: Vec<String> = (statuses.iter())
        .map(|s| (s, rows.iter().filter(|r| r.status == *s).count()))
        .filter(|(_, n)| *n > 0)
        .map(|(s, n)| format!("{n} {s}"))
        .collect();
    format!("{} trials: {}", rows.len(), counted.join(", "))
}

/// `text` cut to `width` columns, with `…` where it was cut.
fn fit(text: &str, width: usize) -> String {
    console::truncate_str(text, width, "…").into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(trial: usize, lr: f64, monitored: Option<f64>) -> TrialRow {
        let values = [
            ("train.lr".to_string(), toml::Value::Float(lr)),
            (
                "model.hidden".into(),
                toml::Value::Array(vec![64.into(), 64.into()]),
            ),
            ("train.batch_size".into(), toml::Value::Integer(256)),
            (
                "train.weight_decay".into(),
                toml::Value::Float(0.00013799835443124687),
            ),
        ];
        TrialRow {
            rank: monitored.map(|_| trial),
            values: values.into(),
            monitored,
            status: match monitored {
                Some(_) => TrialStatus::Completed,
                None => TrialStatus::Failed,
            },
            ..TrialRow::not_run(trial)
        }
    }

    fn rows() -> Vec<TrialRow> {
        let mut rows: Vec<TrialRow> = (1..=8)
            .map(|t| {
                row(
                    t,
                    0.0040911957337541995 * t as f64,
                    Some(0.9 - t as f64 / 100.0),
                )
            })
            .collect();
        rows.push(row(9, 0.1, None));
        rows
    }

    #[test]
    fn no_line_is_wider_than_the_terminal_and_values_have_three_digits() {
        let dir = Path::new("runs/search-tpe-sweep");
        for width in [40, 80, 160] {
            let text = compact(&rows(), ("val_accuracy", MonitorMode::Max), dir, width);
            for line in text.lines() {
                assert!(line.chars().count() <= width, "{width}: {line:?}");
            }
            assert!(text.contains("9 trials: 8 completed, 1 failed"), "{text}");
        }
        let wide = compact(&rows(), ("val_accuracy", MonitorMode::Max), dir, 160);
        assert!(
            wide.contains("0.00409") && wide.contains("1.38e-4"),
            "{wide}"
        );
        assert!(!wide.contains("0.0040911957"), "{wide}");
        assert_eq!(wide.lines().filter(|l| l.contains("trial-00")).count(), 5);
        assert!(wide.contains("the full table: runs/search-tpe-sweep/sweep.md"));
        // At 80 columns the keys that do not fit are left out, and said to be.
        let narrow = compact(&rows(), ("val_accuracy", MonitorMode::Max), dir, 60);
        assert!(narrow.contains("(not shown here: "), "{narrow}");
        assert!(
            narrow.contains("train.weight_decay; in sweep.md)"),
            "{narrow}"
        );
    }

    #[test]
    fn floats_read_to_their_significant_digits() {
        let r = |f: f64| rounded(&toml::Value::Float(f), 3);
        assert_eq!(r(0.0040911957337541995), "0.00409");
        assert_eq!(r(0.00013799835443124687), "1.38e-4");
        assert_eq!(r(0.1), "0.1");
        assert_eq!(r(123456.0), "1.23e5");
        assert_eq!(r(2.0), "2");
        assert_eq!(r(0.0), "0");
    }
}
