//! A search's own failures, apart from a bad config: what its layers (the study's storage, a
//! trial's child process) hit while it runs. Each has its exit code (docs/configuration.md), so
//! that a cluster's job can tell "retry later" from "fix the config".

/// What stopped a search that its config did not.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SweepError {
    /// The study's storage could not be reached, read or written (a Redis server gone, a
    /// journal file's filesystem failing). Exit code 75 (`EX_TEMPFAIL`): what the workers wrote
    /// before is kept, and a trial this worker held is taken up again, from its latest
    /// checkpoint, when it (or another) rejoins.
    #[error(
        "--storage {storage}: {message}; the study keeps what was written before, so rejoin \
         once the storage is back (a trial left running goes on from its latest checkpoint)"
    )]
    Storage {
        /// The storage, as `--storage` gave it.
        storage: String,
        /// What failed, on one line.
        message: String,
    },
}

impl SweepError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            SweepError::Storage { .. } => 75,
        }
    }
}
