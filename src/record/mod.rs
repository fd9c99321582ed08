//! What a run records: `snapshots.jsonl` as it goes (one [`Snapshot`] per line, each epoch's
//! with its [`StepTrace`] points), the [`Observer`] that shows progress, the growth watch over
//! the epochs' in-use figures, and `summary.json` ([`RunSummary`]) at the end. Written by the
//! training loop ([`crate::train`]), read by [`crate::report`], `compare` and `sweep`.

mod error;
mod growth;
mod host;
mod json;
pub(crate) mod names;
mod observer;
mod pace;
mod search_status;
mod snapshots;
mod summary;
pub mod tensorboard;
mod trace;

pub use error::RecordError;
pub use growth::{check_growth, GrowthAlarm, GrowthWatch};
pub use host::host_name;
pub use json::{parse_json, read_json, write_json, JsonError};
pub use observer::{EpochProgress, Observer, Silent, Warning};
pub use pace::Pace;
pub use search_status::{RunningTrial, SearchStatus};
pub use snapshots::{
    as_it_stands, current_epochs, read_snapshot_log, read_snapshots, write_atomic, Event, Retained,
    Snapshot, SnapshotLog, SnapshotWriter,
};
pub use summary::{RankedCheckpoint, RunStatus, RunSummary, MAX_EPOCHS};
pub use trace::{StepSample, StepTrace, POINTS_PER_EPOCH};
