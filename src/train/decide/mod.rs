//! The loop's decisions, as pure state machines: they take numbers (a step done, an epoch's
//! metric) and return what to do (the next learning rate; keep this checkpoint as the best,
//! or among the best k; stop). Like the memory policies they need no device and are tested on numbers alone; the
//! epoch loop is the one place that carries them out.

mod early_stop;
mod keep_best;
mod plateau;
mod schedule;

pub use early_stop::{EarlyStop, EarlyStopState, Verdict};
pub use keep_best::rank;
pub use schedule::Schedule;
pub(crate) use schedule::{read_plateau, PLATEAU_FILE};
