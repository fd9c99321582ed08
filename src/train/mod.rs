//! The training loop, for any [`Task`](crate::task::Task): eager autodiff steps, gradient
//! accumulation that averages like one large batch, mixed precision, validation, checkpoints,
//! and the memory [`Governor`](crate::memory::Governor) at every phase.
//!
//! - [`trainer`](Trainer): set-up and preflight, then the run's outcome;
//! - `run_dir`: the run directory and the resolved `config.toml`;
//! - `epochs`: the epoch loop;
//! - `step`: one optimizer step over micro-batches; [`precision`]: mixed precision;
//! - `checkpoint`: kill-safe checkpoints; `resume`: continuing a run from one;
//! - `stats`: figures that become the summary;
//! - `builtin`: the one place that maps a config's model and data to a built-in task.

mod builtin;
mod checkpoint;
mod epochs;
pub mod precision;
pub(crate) mod resume;
pub(crate) mod run_dir;
mod stats;
mod step;
mod summary;
mod trainer;

pub use checkpoint::{latest_checkpoint, Checkpoint, CheckpointState, Checkpointer};
pub use precision::{GroupOutcome, LossScaler, MixedPrecision};
pub use step::{
    accumulate_gradients, accumulated_step, build_optimizer, micro_batches, resting_bytes,
    Accumulated, Stepped,
};
pub use summary::{RunStatus, RunSummary};
pub use trainer::Trainer;

pub use crate::memory::{EpochProgress, Observer, Silent, Warning};
