//! A search's trials in child processes, several at once under a memory budget: each trial's
//! lease is its child's `memory.limit` (`launch`), the scheduler starts trials as their
//! leases fit (`scheduler`, with its pruner's part in `pruning` and what it tells in `view`),
//! the children are processes it watches and stops (`processes`), each dies with the search
//! (`parent_death`), and `schedule.json` records when each ran under which lease.

pub(in crate::sweep) mod launch;
pub(in crate::sweep) mod parent_death;
pub(in crate::sweep) mod processes;
pub(in crate::sweep) mod pruning;
pub(in crate::sweep) mod scheduler;
pub(in crate::sweep) mod state;
pub(in crate::sweep) mod timeline;
pub(in crate::sweep) mod trials;
pub(in crate::sweep) mod view;

pub use launch::run_child;
pub use timeline::{Slot, Timeline};
pub use trials::runs_trials;
pub(super) use trials::{train_parallel, Packed};
