//! A step's breach: what a check inside a step reports when the limit stops it.

use crate::memory::policy::LimitExceeded;
use crate::memory::Layout;

/// A step that the limit stopped before the optimizer update.
#[derive(Debug, Clone, PartialEq)]
pub enum Breach {
    /// `on_limit = "shrink"`: retry the step at the layout the policy chose (the micro-batch
    /// halved).
    Shrink {
        /// The figure that breached.
        observed: u64,
        /// The layout to retry at.
        layout: Layout,
    },
    /// Stop the run.
    Fail(LimitExceeded),
}
