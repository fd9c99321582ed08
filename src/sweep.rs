//! `tidemark sweep`: N trainings one after another in one process, each with its own run
//! directory and seed, under the configured `clear` policy, and a table of what each run took
//! and what it gave back.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;

use crate::config::{ConfigBuilder, RunConfig};
use crate::error::Error;
use crate::memory::write_atomic;
use crate::memory::Observer;
use crate::memory::{format_bytes, format_signed_bytes};
use crate::train::Trainer;

/// Tolerance for bytes kept after release, as a share of the run's peak.
pub const RETAINED_TOLERANCE: f64 = 0.01;
/// Tolerance for resident memory kept after release (runs 2..N), as a share of what the run
/// added at its peak.
pub const RSS_TOLERANCE: f64 = 0.05;

/// One run of a sweep.
#[derive(Debug, Clone, Serialize)]
pub struct SweepRow {
    /// 1-based run number.
    pub run: usize,
    /// The run directory.
    pub run_dir: PathBuf,
    /// Final training loss.
    pub final_loss: Option<f64>,
    /// Peak bytes in use.
    pub peak_bytes_in_use: u64,
    /// Bytes reserved after the run released its memory.
    pub reserved_at_end: u64,
    /// Bytes in use after release minus before the run.
    pub retained_bytes_in_use: i64,
    /// Bytes reserved after release minus before the run.
    pub retained_bytes_reserved: i64,
    /// Process resident set before the run.
    pub rss_before_bytes: u64,
    /// Peak process resident set during the run.
    pub rss_peak_bytes: u64,
    /// Process resident set after the release.
    pub rss_after_bytes: u64,
}

impl SweepRow {
    /// `retained_bytes_in_use` as a share of the run's peak.
    pub fn retained_share(&self) -> f64 {
        self.retained_bytes_in_use.max(0) as f64 / self.peak_bytes_in_use.max(1) as f64
    }

    /// Resident memory kept: (after − before) / (peak − before).
    pub fn rss_share(&self) -> f64 {
        let taken = self
            .rss_peak_bytes
            .saturating_sub(self.rss_before_bytes)
            .max(1) as f64;
        (self.rss_after_bytes as f64 - self.rss_before_bytes as f64).max(0.0) / taken
    }

    /// Whether this run meets both release criteria (the RSS one from run 2 on).
    pub fn released(&self) -> bool {
        self.retained_share() <= RETAINED_TOLERANCE
            && (self.run == 1 || self.rss_share() <= RSS_TOLERANCE)
    }
}

/// Runs `config` `runs` times. Run `i` is named `run-<i>` with seed `seed + i - 1`, inside
/// `<output_dir>/<name>-sweep/`. Writes `sweep.json` and `sweep.md` there.
pub fn sweep(
    config: &RunConfig,
    runs: usize,
    mut observer: impl FnMut(usize) -> Box<dyn Observer>,
) -> Result<(PathBuf, Vec<SweepRow>), Error> {
    let dir = config
        .run
        .output_dir
        .join(format!("{}-sweep", config.run.name));
    let mut rows = Vec::with_capacity(runs);
    for run in 1..=runs {
        let cfg = ConfigBuilder::from_config(config)
            .output_dir(&dir)
            .name(format!("run-{run:02}"))
            .seed(config.run.seed + run as u64 - 1)
            .build()?;
        let summary = Trainer::new(cfg).observer(observer(run)).run()?;
        let retained = summary
            .retained
            .expect("a completed run records what it retained");
        rows.push(SweepRow {
            run,
            run_dir: summary.run_dir,
            final_loss: summary.final_loss,
            peak_bytes_in_use: summary.peak_bytes_in_use,
            reserved_at_end: (retained.retained_bytes_reserved
                + summary.baseline_bytes_reserved as i64)
                .max(0) as u64,
            retained_bytes_in_use: retained.retained_bytes_in_use,
            retained_bytes_reserved: retained.retained_bytes_reserved,
            rss_before_bytes: retained.rss_before_bytes,
            rss_peak_bytes: retained.rss_peak_bytes,
            rss_after_bytes: retained.rss_after_bytes,
        });
    }
    let json = serde_json::to_vec_pretty(&rows).expect("rows serialise");
    write_atomic(&dir.join("sweep.json"), &json)
        .map_err(|e| Error::io(dir.join("sweep.json"), e))?;
    write_atomic(&dir.join("sweep.md"), table(&rows).as_bytes())
        .map_err(|e| Error::io(dir.join("sweep.md"), e))?;
    Ok((dir, rows))
}

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
            r.final_loss.map_or("-".into(), |l| format!("{l:.4}")),
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
         added (runs 2..N). RSS held since start: resident set after the run minus before run 1. {}",
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

#[cfg(test)]
mod tests {
    use super::*;

    fn row(run: usize, retained: i64, rss: (u64, u64, u64)) -> SweepRow {
        SweepRow {
            run,
            run_dir: PathBuf::new(),
            final_loss: Some(0.5),
            peak_bytes_in_use: 1000,
            reserved_at_end: 0,
            retained_bytes_in_use: retained,
            retained_bytes_reserved: 0,
            rss_before_bytes: rss.0,
            rss_peak_bytes: rss.1,
            rss_after_bytes: rss.2,
        }
    }

    #[test]
    fn criteria_follow_the_documented_shares() {
        assert!(row(2, 10, (100, 300, 110)).released());
        assert!(!row(2, 11, (100, 300, 100)).released(), "1.1% retained");
        assert!(!row(2, 0, (100, 300, 111)).released(), "5.5% of RSS kept");
        assert!(
            row(1, 0, (100, 300, 200)).released(),
            "run 1 may keep one-time state"
        );
        assert!((row(2, 0, (100, 300, 150)).rss_share() - 0.25).abs() < 1e-9);
    }

    #[test]
    fn table_marks_runs_that_kept_memory() {
        let text = table(&[row(1, 0, (1, 2, 1)), row(2, 500, (1, 2, 1))]);
        assert!(text.contains("| 2 | 0.5000 | 1000 B |"), "{text}");
        assert!(text.contains("Runs that kept memory: 2."), "{text}");
    }
}
