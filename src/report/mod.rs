//! What a run leaves on disk: `snapshots.jsonl` (one memory snapshot per line),
//! `summary.json` and `memory.svg`, and the growth alarm that watches in-use memory epoch by
//! epoch.

mod growth;
mod plot;
mod snapshots;
mod summary;
mod text;

pub use growth::{check_growth, GrowthAlarm};
pub use plot::render_memory_svg;
pub use snapshots::{read_snapshots, Event, Retained, Snapshot, SnapshotWriter};
pub use summary::{RunStatus, RunSummary};
pub use text::report;

use std::path::Path;

/// Writes `contents` to `path` through a temporary file and a rename, so a reader (or a crash)
/// never sees half a file.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, contents)?;
    std::fs::rename(&tmp, path)
}
