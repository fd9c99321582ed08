//! The loop's decisions, as pure state machines: they take numbers (a step done, an epoch's
//! metric) and return what to do (the next learning rate; keep this checkpoint as the best;
//! stop). Like the memory policies they need no device and are tested on numbers alone; the
//! epoch loop is the one place that carries them out.

mod early_stop;
mod schedule;

pub use early_stop::{EarlyStop, EarlyStopState, Verdict};
pub use schedule::Schedule;
