//! A step's breach: what a check inside a step reports when the limit stops it.

use crate::memory::policy::LimitExceeded;

/// A step that the limit stopped before the optimizer update.
#[derive(Debug, Clone, PartialEq)]
pub enum Breach {
    /// `on_limit = "shrink"`: halve the micro-batch and retry the step.
    Shrink {
        /// The figure that breached.
        observed: u64,
    },
    /// Stop the run.
    Fail(LimitExceeded),
}
