//! A search's trials ranked by the monitored metric, as `sweep.md` and the terminal show them:
//! the best config named, each trial's values, what it took and gave back, and whether it
//! released its memory.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{SweepRow, RETAINED_TOLERANCE, RSS_TOLERANCE};
use crate::config::MonitorMode;
use crate::memory::{format_bytes, format_signed_bytes};
use crate::sweep::space::{literal, rounded};

/// How a trial ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrialStatus {
    /// Every epoch ran.
    Completed,
    /// It stopped with an error (its `reason`).
    Failed,
    /// The pruner stopped it (its `reason`); its value is from fewer epochs, so it is not
    /// ranked.
    Pruned,
    /// Paused at an ASHA rung by a search that has not finished.
    Paused,
    /// Not trained yet (by a search stopped early, or a study's workers).
    NotRun,
    /// Being trained by a worker of a shared study (`sweep --storage`).
    Running,
}

impl std::fmt::Display for TrialStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TrialStatus::Completed => "completed",
            TrialStatus::Failed => "failed",
            TrialStatus::Pruned => "pruned",
            TrialStatus::Paused => "paused",
            TrialStatus::NotRun => "not run",
            TrialStatus::Running => "running",
        })
    }
}

/// One trial of a search.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrialRow {
    /// 1 for the best; `None` for a trial without a monitored value (failed).
    pub rank: Option<usize>,
    /// 1-based trial number.
    pub trial: usize,
    /// Its directory's name, `trial-007`.
    pub name: String,
    /// The varied keys' values, typed (`sweep.json`: numbers, strings, arrays); a population's
    /// member's, those it ended with (its lineage has those it was drawn with).
    pub values: BTreeMap<String, toml::Value>,
    /// Whether it completed.
    pub status: TrialStatus,
    /// Why it failed, or why it was pruned.
    pub reason: Option<String>,
    /// Its value of the monitored metric (a pruned trial's, after its last epoch).
    pub monitored: Option<f64>,
    /// The epochs it trained.
    #[serde(default)]
    pub epochs: Option<usize>,
    /// Its memory lease, where trials ran in parallel: its memory limit, counted against the
    /// search's budget while it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_bytes: Option<u64>,
    /// When its child process started, in seconds since the search's first trial started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_s: Option<f64>,
    /// When its child process ended, on the same clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_s: Option<f64>,
    /// Each run of its child, `[started_s, ended_s]`, where the pruner paused it between runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<[f64; 2]>,
    /// What it took and gave back (absent if it failed before its run directory existed).
    pub memory: Option<SweepRow>,
    /// A population's member (`method = "pbt"`): each interval it reached, with its settings,
    /// its value and whom it copied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lineage: Vec<super::Interval>,
}

impl TrialRow {
    /// Trial `trial`'s row before it has run: no values, figures or rank.
    pub fn not_run(trial: usize) -> TrialRow {
        TrialRow {
            rank: None,
            trial,
            name: crate::sweep::space::Trial::name_of(trial),
            values: BTreeMap::new(),
            status: TrialStatus::NotRun,
            reason: None,
            monitored: None,
            epochs: None,
            lease_bytes: None,
            started_s: None,
            ended_s: None,
            runs: Vec::new(),
            memory: None,
            lineage: Vec::new(),
        }
    }

    /// Whether it kept memory beyond the tolerances after its release.
    pub fn kept_memory(&self) -> bool {
        self.memory.as_ref().is_some_and(|m| !m.released())
    }
}

/// The error of a search whose every trial failed (exit code 5), with the first trial's
/// reason cut to keep the line short; `None` where any trial completed, was pruned or is yet
/// to run.
pub fn none_completed(rows: &[TrialRow]) -> Option<crate::Error> {
    const REASON_CHARS: usize = 160;
    if rows.is_empty() || rows.iter().any(|r| r.status != TrialStatus::Failed) {
        return None;
    }
    let first = rows.iter().min_by_key(|r| r.trial)?;
    let whole = first.reason.as_deref().unwrap_or("no reason recorded");
    let line = crate::config::headline(whole);
    let reason = match line.char_indices().nth(REASON_CHARS) {
        Some((cut, _)) => format!("{}... (sweep.md has it whole)", &line[..cut]),
        None if line.len() < whole.len() => format!("{line} (sweep.md has it whole)"),
        None => line.to_string(),
    };
    Some(crate::Error::NoTrialCompleted {
        trials: rows.len(),
        first: first.name.clone(),
        reason,
    })
}

/// Orders `rows` best first by their monitored value (`mode`): the completed trials, ranked,
/// then the pruned ones, unranked (their values are from fewer epochs), then the rest in trial
/// order; and numbers the ranks.
pub fn rank(rows: &mut [TrialRow], mode: MonitorMode) {
    let group = |r: &TrialRow| match (r.status, r.monitored) {
        (TrialStatus::Completed, Some(_)) => 0,
        (TrialStatus::Pruned, Some(_)) => 1,
        _ => 2,
    };
    rows.sort_by(|a, b| {
        let by_value = match (a.monitored, b.monitored) {
            (Some(x), Some(y)) if group(a) < 2 => mode.order(x, y),
            _ => std::cmp::Ordering::Equal,
        };
        group(a)
            .cmp(&group(b))
            .then(by_value)
            .then(a.trial.cmp(&b.trial))
    });
    for (i, row) in rows.iter_mut().enumerate() {
        row.rank = (group(row) == 0).then_some(i + 1);
    }
}

/// The ranked table, with the best config named (its `config.toml` under `dir`).
pub fn ranking(rows: &[TrialRow], monitor: &str, mode: MonitorMode, dir: &Path) -> String {
    let mode_name = mode.meaning();
    let mut out = format!("Trials ranked by {monitor} ({mode_name}):\n\n");
    out.push_str(&table(rows, monitor));
    let _ = writeln!(out);
    out.push_str(&best_line(rows, monitor, dir));
    out.push_str(&notes(rows));
    out
}

/// The table: a line per trial under its header.
fn table(rows: &[TrialRow], monitor: &str) -> String {
    let keys: Vec<&String> = rows
        .first()
        .map(|r| r.values.keys().collect())
        .unwrap_or_default();
    let head: Vec<&str> = keys.iter().map(|k| k.as_str()).collect();
    let packed = rows.iter().any(|r| r.lease_bytes.is_some());
    let (extra, extra_columns) = match packed {
        true => (" epochs | lease | ran from | to |", 4),
        false => (" epochs |", 1),
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| rank | trial | {} | {monitor} | status | peak in use | retained in use | released |{extra}",
        head.join(" | ")
    );
    let _ = writeln!(out, "|{}", "---|".repeat(keys.len() + 7 + extra_columns));
    for r in rows {
        let _ = writeln!(out, "{}{}", row_line(r, &keys), schedule_cells(r, packed));
    }
    out
}

/// A trial's cells up to `released`: `| 1 | trial-004 | 0.4 | 0.9000 | completed | ... |`.
fn row_line(r: &TrialRow, keys: &[&String]) -> String {
    let values: Vec<String> = keys
        .iter()
        .map(|k| r.values.get(*k).map_or("-".into(), |v| rounded(v, 4)))
        .collect();
    let memory = r.memory.as_ref();
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} |",
        r.rank.map_or("-".into(), |n| n.to_string()),
        r.name,
        values.join(" | "),
        r.monitored.map_or("-".into(), crate::report::four_digits),
        match &r.reason {
            Some(reason) => format!("{}: {}", r.status, crate::config::one_line(reason)),
            None => r.status.to_string(),
        },
        memory.map_or("-".into(), |m| format_bytes(m.peak_bytes_in_use)),
        memory.map_or("-".into(), |m| format_signed_bytes(m.retained_bytes_in_use)),
        match memory {
            Some(m) if m.released() => "yes",
            Some(_) => "NO",
            None => "-",
        },
    )
}

/// `Best: trial-004 (train.lr = 0.4), val_accuracy 0.9000; its config: ...`, or that no trial
/// completed.
fn best_line(rows: &[TrialRow], monitor: &str, dir: &Path) -> String {
    let Some(best) = rows.iter().find(|r| r.rank == Some(1)) else {
        return format!("No trial completed with a value of {monitor}.\n");
    };
    let values: Vec<String> = best
        .values
        .iter()
        .map(|(k, v)| format!("{k} = {}", literal(v)))
        .collect();
    // A population's member trained at the settings of its lineage, epoch by epoch: its
    // config.toml holds its last ones only, and the schedule below is what reproduces it.
    let config = match best.lineage.is_empty() {
        true => "its config",
        false => "its last settings (the schedule below is what it trained with)",
    };
    format!(
        "Best: {} ({}), {monitor} {}; {config}: {}\n",
        best.name,
        values.join(", "),
        crate::report::four_digits(best.monitored.unwrap_or(f64::NAN)),
        dir.join(&best.name).join("config.toml").display()
    )
}

/// What the table's statuses and release columns mean: the pruned trials, and the trials
/// that kept memory.
fn notes(rows: &[TrialRow]) -> String {
    let mut out = String::new();
    let pruned = rows
        .iter()
        .filter(|r| r.status == TrialStatus::Pruned)
        .count();
    if pruned > 0 {
        let _ = writeln!(
            out,
            "Pruned: {pruned} trials, not ranked (their values are from fewer epochs); the best \
             is chosen among the trials that trained to their last epoch."
        );
    }
    let kept: Vec<&str> = rows
        .iter()
        .filter(|r| r.kept_memory())
        .map(|r| r.name.as_str())
        .collect();
    let _ = writeln!(
        out,
        "Released: retained in use <= {:.0}% of the trial's peak, resident memory kept <= {:.0}% of \
         what it added or under 1 MiB (except a process's first trial, which carries its one-time \
         state). {}",
        RETAINED_TOLERANCE * 100.0,
        RSS_TOLERANCE * 100.0,
        match kept.is_empty() {
            true => "Every trial released its memory.".to_string(),
            false => format!("Trials that kept memory: {}.", kept.join(", ")),
        }
    );
    out
}

/// ` 3 |`, or with trials in parallel ` 3 | 4.0 MiB | 0.0 s | 2.1 s |`: the epochs it
/// trained, its lease and when its child ran.
fn schedule_cells(r: &TrialRow, packed: bool) -> String {
    let dash = || "-".to_string();
    let epochs = r.epochs.map_or_else(dash, |e| e.to_string());
    if !packed {
        return format!(" {epochs} |");
    }
    let seconds = |s: Option<f64>| s.map_or_else(dash, |s| format!("{s:.1} s"));
    format!(
        " {epochs} | {} | {} | {} |",
        r.lease_bytes.map_or_else(dash, format_bytes),
        seconds(r.started_s),
        seconds(r.ended_s)
    )
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_search_whose_every_trial_failed_is_an_error_with_the_first_reason() {
        let row = |trial, status, reason: &str| TrialRow {
            status,
            reason: Some(reason.to_string()),
            ..TrialRow::not_run(trial)
        };
        let failed = |trial| row(trial, TrialStatus::Failed, &"x".repeat(400));
        let mut rows = vec![
            failed(2),
            row(1, TrialStatus::Failed, "memory limit exceeded"),
        ];
        let e = none_completed(&rows).expect("all failed");
        assert_eq!(e.exit_code(), 5);
        assert_eq!(
            e.to_string(),
            "every trial of the search failed (2 of 2); the first, trial-001: memory limit \
             exceeded"
        );
        rows[1] = failed(1);
        let line = none_completed(&rows).unwrap().to_string();
        assert!(line.len() < 300, "{} characters: {line}", line.len());
        assert!(line.ends_with("x... (sweep.md has it whole)"), "{line}");
        rows.push(row(3, TrialStatus::Completed, ""));
        assert!(none_completed(&rows).is_none(), "one completed");
        rows[2].status = TrialStatus::Pruned;
        assert!(none_completed(&rows).is_none(), "one pruned");
        assert!(none_completed(&[]).is_none());
    }

    use super::*;

    fn row(trial: usize, monitored: Option<f64>) -> TrialRow {
        TrialRow {
            values: [(
                "train.lr".to_string(),
                toml::Value::Float(trial as f64 / 10.0),
            )]
            .into(),
            status: match monitored {
                Some(_) => TrialStatus::Completed,
                None => TrialStatus::Failed,
            },
            reason: monitored
                .is_none()
                .then(|| "memory limit exceeded".to_string()),
            monitored,
            ..TrialRow::not_run(trial)
        }
    }

    #[test]
    fn trials_rank_by_the_monitor_and_failed_ones_go_last() {
        let mut rows = vec![
            row(1, Some(0.5)),
            row(2, None),
            row(3, Some(0.2)),
            row(4, Some(0.9)),
        ];
        rank(&mut rows, MonitorMode::Min);
        let order: Vec<(usize, Option<usize>)> = rows.iter().map(|r| (r.trial, r.rank)).collect();
        assert_eq!(order, [(3, Some(1)), (1, Some(2)), (4, Some(3)), (2, None)]);
        rank(&mut rows, MonitorMode::Max);
        assert_eq!(rows[0].trial, 4);
        let text = ranking(&rows, "val_accuracy", MonitorMode::Max, Path::new("s"));
        assert!(
            text.contains("| 1 | trial-004 | 0.4 | 0.9000 | completed |"),
            "{text}"
        );
        assert!(
            text.contains("| - | trial-002 | 0.2 | - | failed: memory limit exceeded |"),
            "{text}"
        );
        assert!(text.contains("Best: trial-004 (train.lr = 0.4), val_accuracy 0.9000; its config: s/trial-004/config.toml"), "{text}");
        // A pruned trial, even with the best value, is not ranked: it trained fewer epochs.
        let mut pruned = row(5, Some(0.95));
        pruned.status = TrialStatus::Pruned;
        pruned.reason = Some("median rule".into());
        rows.push(pruned);
        rank(&mut rows, MonitorMode::Max);
        let order: Vec<(usize, Option<usize>)> = rows.iter().map(|r| (r.trial, r.rank)).collect();
        assert_eq!(
            order,
            [
                (4, Some(1)),
                (1, Some(2)),
                (3, Some(3)),
                (5, None),
                (2, None)
            ]
        );
        let text = ranking(&rows, "val_accuracy", MonitorMode::Max, Path::new("s"));
        assert!(
            text.contains("| - | trial-005 | 0.5 | 0.9500 | pruned: median rule |"),
            "{text}"
        );
    }
}
