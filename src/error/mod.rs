//! The library's top-level error, and the exit code each kind maps to.

mod lease;
mod sweep;
mod training;
mod usage;

pub use lease::LeaseError;
pub use sweep::SweepError;
pub use training::TrainingError;
pub use usage::UsageError;

use std::path::{Path, PathBuf};

use crate::backend::BackendError;
use crate::config::ConfigError;
use crate::data::DataError;
use crate::memory::{LimitExceeded, MemoryError};
use crate::record::RecordError;
use crate::report::ReportError;

/// Anything that stops a run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A command's argument cannot be used.
    #[error(transparent)]
    Usage(#[from] UsageError),
    /// The requested device cannot be used.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// The dataset cannot be loaded.
    #[error(transparent)]
    Data(#[from] DataError),
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A checkpoint to resume from is missing, truncated or corrupt.
    #[error("{}: {message}", path.display())]
    Checkpoint {
        /// The file.
        path: PathBuf,
        /// What is wrong with it, on one line.
        message: String,
    },
    /// A file a run or a search wrote cannot be read back.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The memory limit was exceeded (`on_limit = "fail"`, or no smaller micro-batch left).
    #[error(transparent)]
    Limit(#[from] LimitExceeded),
    /// The device ran out of memory (reported by the driver, not by tidemark's limit).
    #[error(
        "the device ran out of memory allocating {}; set memory.limit below the device's free \
         memory so the run stops (or shrinks, with memory.on_limit = \"shrink\") before the driver does",
        crate::memory::format_bytes(*size)
    )]
    OutOfMemory {
        /// The allocation that failed, in bytes.
        size: u64,
    },
    /// A model whose parameters alone are more than the device's whole memory: refused from
    /// their shapes, before any is allocated.
    #[error(
        "the model's {params} parameters take {} as f32, more than the {} has in all ({}); \
         nothing was allocated",
        crate::memory::format_bytes(*bytes),
        if *host { "host" } else { "device" },
        crate::memory::format_bytes(*total)
    )]
    ModelTooLarge {
        /// The parameters, counted from their shapes (`u64::MAX` where more).
        params: u64,
        /// Their bytes as f32 (`u64::MAX` where more).
        bytes: u64,
        /// The device's whole memory.
        total: u64,
        /// Whether the device is the host (flex).
        host: bool,
    },
    /// The device reported a failure.
    #[error("device error: {0}")]
    Device(String),
    /// A picture or report could not be drawn or written.
    #[error("drawing {0}")]
    Report(#[from] ReportError),
    /// A checkpoint could not be written (the run's earlier checkpoints are kept).
    #[error("saving the {what} checkpoint in {}: {message}", dir.display())]
    CheckpointSave {
        /// The checkpoint's directory.
        dir: PathBuf,
        /// Which part: the model, the optimizer or the schedule.
        what: &'static str,
        /// Why, on one line.
        message: String,
    },
    /// SIGINT or SIGTERM stopped a search (each trial kept its latest checkpoint; one trained
    /// in the search's process writes one where it stopped), or a
    /// [`Trainer::stop_when`](crate::Trainer::stop_when) flag stopped a run.
    #[error(
        "stopped by a signal: every running trial kept its latest checkpoint; continue with \
         tidemark sweep --resume on the sweep directory (a run trained from code: \
         Trainer::resume on its run directory)"
    )]
    Interrupted,
    /// SIGINT or SIGTERM stopped `tidemark train`: the run wrote a checkpoint where it
    /// stopped, as a killed run is left, and a resume goes on from it.
    #[error(
        "stopped by a signal: the run wrote a checkpoint where it stopped; continue with \
         tidemark train --resume {}",
        run_dir.as_ref().map_or("on its run directory (named above)".into(), |d| d.display().to_string())
    )]
    RunStopped {
        /// The run's directory, where the command named it (`--resume`).
        run_dir: Option<PathBuf>,
    },
    /// SIGINT or SIGTERM stopped a worker of a shared study: its trials were handed back
    /// (WAITING, each kept its latest checkpoint), for it or any worker to take up.
    #[error(
        "stopped by a signal: this worker handed its trials back to the study, each with its \
         latest checkpoint; rejoin with the same command: {rejoin}"
    )]
    WorkerStopped {
        /// The command that started the worker, to run again.
        rejoin: String,
    },
    /// Training could not go on: the loss diverged, loss scaling collapsed, or a hand-written
    /// loop's calls came out of order.
    #[error(transparent)]
    Training(#[from] TrainingError),
    /// A search's own layers failed (its study's storage, say), not its config.
    #[error(transparent)]
    Sweep(#[from] SweepError),
    /// A run's memory lease could not be taken: the registry or the budget cannot be used
    /// (exit code 2), or the lease does not fit (exit code 3).
    #[error(transparent)]
    Lease(#[from] LeaseError),
    /// Every trial of a search failed: nothing was found, though each failure is recorded.
    #[error(
        "every trial of the search failed ({trials} of {trials}); the first, {first}: {reason}"
    )]
    NoTrialCompleted {
        /// How many trials it had.
        trials: usize,
        /// The first trial's name.
        first: String,
        /// Why it failed, cut to fit the line.
        reason: String,
    },
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.as_ref().to_path_buf(),
            source,
        }
    }

    /// `dir` is not a run directory: `file`, which every run has, is not in it. The one error
    /// `report`, `evaluate`, `predict` and `train --resume` give for it.
    pub fn not_a_run(dir: &Path, file: &Path) -> Self {
        let why = if !dir.exists() {
            "no such directory".to_string()
        } else if !dir.is_dir() {
            "it is a file, not a directory".to_string()
        } else {
            format!("{} is missing", file.display())
        };
        Error::Usage(UsageError::new(
            dir.display().to_string(),
            format!("not a run directory: {why}"),
        ))
    }

    /// A checkpoint file that cannot be used; `message` is kept to one line.
    pub fn checkpoint(path: impl AsRef<Path>, message: String) -> Self {
        Error::Checkpoint {
            path: path.as_ref().to_path_buf(),
            message: one_line(&message),
        }
    }

    /// A device failure; an out-of-memory becomes [`Error::OutOfMemory`].
    pub fn device(e: burn::tensor::ExecutionError) -> Self {
        let text = format!("{e}");
        match crate::memory::oom::out_of_memory_size(&text) {
            Some(size) => Error::OutOfMemory { size },
            // One line: the error's own lines, trimmed and joined.
            None => Error::Device(one_line(&text)),
        }
    }

    /// The process exit code for this error: 2 for bad input (config, arguments, device choice, data
    /// files, a run's own files that cannot be read back), 3 for an exceeded memory limit or a
    /// device out-of-memory, 4 for training that could not go on ([`TrainingError`]), 5 for a
    /// search whose every trial failed, 75 for a study's storage that failed
    /// ([`SweepError`]), 130 for a stop by a signal, 1 for everything
    /// else.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Config(_)
            | Error::Usage(_)
            | Error::Backend(_)
            | Error::Data(_)
            | Error::Checkpoint { .. } => 2,
            Error::Record(RecordError::Corrupt { .. }) => 2,
            Error::Limit(_) | Error::OutOfMemory { .. } | Error::ModelTooLarge { .. } => 3,
            Error::Interrupted | Error::WorkerStopped { .. } | Error::RunStopped { .. } => 130,
            Error::Io { .. }
            | Error::Record(RecordError::Io { .. })
            | Error::Device(_)
            | Error::Report(_)
            | Error::CheckpointSave { .. } => 1,
            Error::Training(_) => 4,
            Error::NoTrialCompleted { .. } => 5,
            Error::Sweep(e) => e.exit_code(),
            Error::Lease(e) => e.exit_code(),
        }
    }
}

/// `text`'s lines, trimmed and joined with spaces.
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The memory layer's failures: its settings are `[memory]`'s, its device errors the device's.
impl From<MemoryError> for Error {
    fn from(e: MemoryError) -> Self {
        match e {
            MemoryError::Settings(message) => Error::Config(ConfigError {
                origin: "[memory]".into(),
                key: None,
                message,
            }),
            MemoryError::Device(e) => Error::device(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::ExecutionError;

    #[test]
    fn a_device_out_of_memory_becomes_a_typed_error_with_exit_3() {
        let oom = ExecutionError::WithContext {
            reason: "out of device memory allocating 1073741824 bytes\n   0: backtrace".into(),
        };
        let e = Error::device(oom);
        assert!(
            matches!(
                e,
                Error::OutOfMemory {
                    size: 1_073_741_824
                }
            ),
            "{e:?}"
        );
        assert_eq!(e.exit_code(), 3);
        assert!(
            e.to_string()
                .starts_with("the device ran out of memory allocating 1.0 GiB;"),
            "{e}"
        );
        let other = Error::device(ExecutionError::WithContext {
            reason: "kernel failed".into(),
        });
        assert_eq!(
            other.to_string(),
            "device error: An error happened during execution Caused by: kernel failed"
        );
        assert_eq!(other.exit_code(), 1);
    }
}
