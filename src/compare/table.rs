//! The comparison as a Markdown table: a row per policy, `-` where a figure is not known.

use std::fmt::Write;

use super::CompareRow;
use crate::memory::{format_bytes, format_signed_bytes};

fn opt_bytes(b: Option<u64>) -> String {
    b.map_or("-".into(), format_bytes)
}

fn signed(b: Option<i64>) -> String {
    b.map_or("-".into(), format_signed_bytes)
}

/// The comparison as a Markdown table.
pub fn table(rows: &[CompareRow]) -> String {
    let mut out = String::from(
        "| policy | samples/s | peak in use | peak reserved | fragmentation | retained in use | \
         retained reserved | limit | micro-batch | val accuracy | status |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let ran = r.run_dir.is_some();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.policy.name(),
            r.samples_per_sec.map_or("-".into(), |s| format!("{s:.0}")),
            if ran {
                format_bytes(r.peak_bytes_in_use)
            } else {
                "-".into()
            },
            if ran {
                format_bytes(r.peak_bytes_reserved)
            } else {
                "-".into()
            },
            r.fragmentation
                .map_or("-".into(), |f| format!("{:.1}%", f * 100.0)),
            signed(r.retained_bytes_in_use),
            signed(r.retained_bytes_reserved),
            opt_bytes(r.limit_bytes),
            r.micro_batch.map_or("-".into(), |m| m.to_string()),
            r.val_accuracy
                .map_or("-".into(), |a| format!("{:.1}%", a * 100.0)),
            r.status.to_string().replace('|', "/"),
        );
    }
    out
}
