//! The training loop: eager autodiff steps, gradient accumulation that averages like one
//! large batch, validation, and a memory snapshot per epoch.

mod fit;
mod observer;
mod step;

pub use fit::Trainer;
pub use observer::{EpochProgress, Observer, Silent};
pub use step::{accumulated_step, build_optimizer, StepOutput};
