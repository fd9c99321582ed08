//! A search's own failures, apart from a bad config, by the layer that hit them: the study's
//! storage, its plan, the leases, a trial's child process. Each has its exit code
//! (docs/configuration.md), so that a cluster's job can tell "retry later" from "fix the
//! config".

/// What stopped a search that its config did not.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SweepError {
    /// The study's storage could not be reached, read or written (a Redis server gone, a
    /// journal file's filesystem failing). Exit code 75 (`EX_TEMPFAIL`): what the workers wrote
    /// before is kept, and a trial this worker held is taken up again, from its latest
    /// checkpoint, when it (or another) rejoins. A storage that no wait mends (a journal path
    /// that is a directory or not writable, a Redis server that wants a password, a journal's
    /// key of another type) is a [`UsageError`](crate::error::UsageError) instead, exit code 2.
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
    /// What a search was planned as cannot be used: a study or a sweep directory that holds
    /// another search, a journal record or a recorded order that cannot be read, a trial another
    /// process is training. Exit code 2, as a bad config: the command needs changing.
    #[error("{origin}: {message}")]
    Plan {
        /// What holds the plan (a study in its storage, a directory, a file).
        origin: String,
        /// What is wrong, on one line.
        message: String,
    },
    /// No trial's memory lease fits the search's budget, or the device does not tell the
    /// memory a default budget is a share of. Exit code 2: `sweep.budget` needs raising (or
    /// giving as a size), or the trials shrinking.
    #[error("[sweep]: sweep.budget: {message}")]
    Lease {
        /// Which lease, against which budget.
        message: String,
    },
    /// A trial's child process could not be started. Exit code 1.
    #[error("{trial}: its process could not start: {message}")]
    Child {
        /// The trial (`trial-007`).
        trial: String,
        /// The OS's reason.
        message: String,
    },
}

impl SweepError {
    /// The error of the storage `spec` (as `--storage` gave it), which failed with `message`:
    /// the argument's, exit code 2, where `fix` says what to change (no wait mends it); else
    /// the storage's, exit code 75.
    pub fn storage_failed(spec: &str, message: String, fix: Option<&str>) -> super::Error {
        match fix {
            Some(fix) => super::Error::Usage(super::UsageError::new(
                format!("--storage {spec}"),
                format!("{message}; {fix}"),
            )),
            None => super::Error::Sweep(SweepError::Storage {
                storage: spec.to_string(),
                message,
            }),
        }
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            SweepError::Storage { .. } => 75,
            SweepError::Plan { .. } | SweepError::Lease { .. } => 2,
            SweepError::Child { .. } => 1,
        }
    }
}
