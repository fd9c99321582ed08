//! The training loop: eager autodiff steps, gradient accumulation that averages like one
//! large batch, validation, and a memory snapshot per epoch.

mod checkpoint;
mod fit;
mod hooks;
mod observer;
pub mod precision;
mod step;

pub use checkpoint::{latest_checkpoint, Checkpointer};
pub use fit::Trainer;
pub use observer::{EpochProgress, Observer, Silent};
pub use precision::{GroupOutcome, LossScaler, MixedPrecision};
pub use step::{accumulate_gradients, accumulated_step, build_optimizer, Accumulated, StepOutput};
