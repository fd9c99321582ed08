//! The training loop, for any [`Task`](crate::task::Task): eager autodiff steps, gradient
//! accumulation that averages like one large batch, mixed precision, validation, checkpoints,
//! and the memory layer at every phase: a [`MemoryGuard`] that enforces it, and a
//! [`RunRecorder`] that records it.
//!
//! - [`trainer`](Trainer): a task's data checked, `train.lr = "find"` carried out, then its run
//!   opened as a [`HandLoop`];
//! - `hand`: the [`HandLoop`], the one loop: a run opened or resumed, its steps, validation,
//!   epoch ends and summary;
//! - `epochs`: the trainer's epochs, the hand loop's calls over a task's loaders, with a
//!   search's gate and the memory advisor;
//! - `run_dir`: the run directory and the resolved `config.toml`;
//! - `learner`: the model and what updates it, with the calls the loop makes: a step, an
//!   epoch's end, a checkpoint;
//! - `step`: one optimizer step over micro-batches, and clipping; [`precision`]: mixed
//!   precision; `optimizer`: the configured one, from Burn's;
//! - `decide`: the learning-rate [`Schedule`] and [`EarlyStop`], as pure decisions;
//! - `checkpoint`: kill-safe checkpoints; `resume`: continuing a run from one;
//! - `guard`: the [`MemoryGuard`], which enforces the memory layer's
//!   [`Control`](crate::memory::Control) over a run: the batch layout a limit may shrink, the
//!   step under the limit, `fit`'s layout;
//! - `recorder`: the [`RunRecorder`], which writes what the guard sees and the loop reports:
//!   the snapshots, the step trace, the run's memory statistics, progress to the observer;
//! - `stats`: figures that become the [summary](crate::record::RunSummary).

mod before_run;
mod checkpoint;
mod decide;
mod ema;
mod epochs;
mod fit_plan;
pub mod gate;
mod guard;
mod hand;
mod learner;
pub mod lr_find;
mod moved;
mod optimizer;
pub mod precision;
pub(crate) mod preflight;
mod recorder;
pub(crate) mod resume;
pub(crate) mod run_dir;
mod stats;
mod step;
mod trainer;

pub(crate) use checkpoint::File as CheckpointFile;
pub use checkpoint::{latest_checkpoint, Checkpoint, CheckpointState, Checkpointer};
pub use decide::{EarlyStop, EarlyStopState, Schedule, Verdict};
pub use gate::{Ending, EpochGate, Gate};
pub use hand::{EpochBatches, HandLoop};
pub use optimizer::{build_optimizer, FusedAdam};
pub use precision::{GroupOutcome, LossScaler, MixedPrecision};
pub use resume::MAY_RETUNE;
pub use step::{
    accumulate_gradients, accumulated_step, apply_gradients, footprint, micro_batches,
    resting_bytes, Accumulated, Clip, GradientSum, HostMaster, HostSum, Stepped, SumPlace, Updated,
};
pub use trainer::Trainer;

pub use crate::memory::{Layout, Offloaded};
pub use guard::{Breach, MemoryGuard, Prepared, StepCheck};
pub use recorder::{EpochFigures, MemoryStats, RunRecorder};
