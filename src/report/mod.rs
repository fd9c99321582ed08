//! What a run leaves on disk: `snapshots.jsonl` (one memory snapshot per line) and
//! `summary.json`.

mod snapshots;
mod summary;

pub use snapshots::{read_snapshots, Event, Retained, Snapshot, SnapshotWriter};
pub use summary::{RunStatus, RunSummary};

use std::path::Path;

/// Writes `contents` to `path` through a temporary file and a rename, so a reader (or a crash)
/// never sees half a file.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, contents)?;
    std::fs::rename(&tmp, path)
}
