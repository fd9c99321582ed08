//! A search's trials in child processes, several at once under a memory budget (a study's
//! worker packing its device, `study/slots.rs`): each trial's lease is its child's
//! `memory.limit` (`launch`), the children are processes the worker watches and stops
//! (`processes`), each dies with it (`parent_death`), which binary they run (`trials`), and
//! `schedule-<worker>.json` records when each ran under which lease (`timeline`).

pub(in crate::sweep) mod launch;
pub(in crate::sweep) mod parent_death;
pub(in crate::sweep) mod processes;
pub(in crate::sweep) mod timeline;
pub(in crate::sweep) mod trials;

pub use launch::run_child;
pub use timeline::{Slot, Timeline};
pub use trials::runs_trials;
