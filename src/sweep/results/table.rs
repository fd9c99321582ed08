//! The table of a sweep of runs (`sweep --runs N`, at the end of its `sweep.md`): what each run
//! took and gave back, with the release criteria checked per run.

use std::fmt::Write as _;

use super::{SweepRow, TrialRow, TrialStatus, RETAINED_TOLERANCE, RSS_TOLERANCE};
use crate::memory::{format_bytes, format_signed_bytes};

/// The sweep as a Markdown table, with the release criteria checked per run.
pub fn table(rows: &[SweepRow]) -> String {
    let mut out = String::from(
        "| run | final loss | peak in use | reserved at end | retained in use | retained reserved \
         | RSS before | RSS peak | RSS after | RSS kept | RSS held since start | released |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let start = rows.first().map_or(0, |r| r.rss_before_bytes) as i64;
    for r in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} ({:.2}%) | {} | {} | {} | {} | {:.1}% | {} | {} |",
            r.run,
            r.final_loss.map_or("-".into(), crate::report::four_digits),
            format_bytes(r.peak_bytes_in_use),
            format_bytes(r.reserved_at_end),
            format_signed_bytes(r.retained_bytes_in_use),
            100.0 * r.retained_share(),
            format_signed_bytes(r.retained_bytes_reserved),
            format_bytes(r.rss_before_bytes),
            format_bytes(r.rss_peak_bytes),
            format_bytes(r.rss_after_bytes),
            100.0 * r.rss_share(),
            format_signed_bytes(r.rss_after_bytes as i64 - start),
            if r.released() { "yes" } else { "NO" },
        );
    }
    let failed: Vec<String> = rows
        .iter()
        .filter(|r| !r.released())
        .map(|r| r.run.to_string())
        .collect();
    let _ = writeln!(
        out,
        "\nCriteria: retained in use <= {:.0}% of the run's peak; RSS kept <= {:.0}% of what the run \
         added, or under 1 MiB (runs 2..N). RSS held since start: resident set after the run minus before run 1. {}",
        RETAINED_TOLERANCE * 100.0,
        RSS_TOLERANCE * 100.0,
        if failed.is_empty() {
            "Every run released its memory.".to_string()
        } else {
            format!("Runs that kept memory: {}.", failed.join(", "))
        }
    );
    out
}

/// The runs' memory table ([`table`]) from its trials' rows: what each run that trained took
/// and gave back, then each run that did not complete, and why.
pub fn runs_table(rows: &[TrialRow]) -> String {
    let mut by_run: Vec<&TrialRow> = rows.iter().collect();
    by_run.sort_by_key(|r| r.trial);
    let memory: Vec<_> = by_run.iter().filter_map(|r| r.memory.clone()).collect();
    let mut text = table(&memory);
    for r in by_run.iter().filter(|r| r.status != TrialStatus::Completed) {
        let why = r.reason.as_deref().map(crate::config::one_line);
        text.push_str(&format!(
            "Run {} ({}): {}{}\n",
            r.trial,
            r.name,
            r.status,
            why.map_or(String::new(), |why| format!(": {why}"))
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::super::run_row::tests::row;
    use super::*;

    #[test]
    fn table_marks_runs_that_kept_memory() {
        let text = table(&[row(1, 0, (1, 2, 1)), row(2, 500, (1, 2, 1))]);
        assert!(text.contains("| 2 | 0.5000 | 1000 B |"), "{text}");
        assert!(text.contains("Runs that kept memory: 2."), "{text}");
    }
}
