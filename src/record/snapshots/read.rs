//! Reading `snapshots.jsonl` back, as a killed run left it.

use std::path::Path;

use super::Snapshot;
use crate::record::RecordError;

/// What a `snapshots.jsonl` holds.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotLog {
    /// Every complete line's snapshot, in order.
    pub snapshots: Vec<Snapshot>,
    /// The 1-based number of a last line without its end, left out: a process was killed while
    /// appending it. Readers say so rather than drop it silently.
    pub cut_line: Option<usize>,
}

/// Reads every snapshot in a `snapshots.jsonl` file.
///
/// A last line without its end is one a process was killed while appending: it is left out
/// (the writer cuts it off when it next opens the file) and its number kept in `cut_line`. A
/// complete line that is not a snapshot is an error naming the file and the line.
pub fn read_snapshot_log(path: &Path) -> Result<SnapshotLog, RecordError> {
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidData => RecordError::corrupt(path, None, "not UTF-8 text"),
        _ => RecordError::io(path, e),
    })?;
    let complete = text.rfind('\n').map_or("", |i| &text[..=i]);
    let mut snapshots = Vec::new();
    for (i, line) in complete.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let snapshot = super::super::parse_json(line.as_bytes())
            .map_err(|e| RecordError::corrupt(path, Some(i + 1), format!("not a snapshot: {e}")))?;
        snapshots.push(snapshot);
    }
    let cut = complete.len() < text.len() && !text[complete.len()..].trim().is_empty();
    Ok(SnapshotLog {
        snapshots,
        cut_line: cut.then(|| complete.lines().count() + 1),
    })
}

/// The snapshots of [`read_snapshot_log`], a cut last line left out.
pub fn read_snapshots(path: &Path) -> Result<Vec<Snapshot>, RecordError> {
    Ok(read_snapshot_log(path)?.snapshots)
}
