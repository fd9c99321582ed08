//! What a search gives back: its rows ranked (`rank`), as tables, the few best for a terminal
//! (`compact`), and what `sweep.svg` draws (`sweep_svg`).

pub(in crate::sweep) mod compact;
pub(in crate::sweep) mod lineage;
pub(in crate::sweep) mod pbt_schedule;
pub(in crate::sweep) mod rank;
pub(in crate::sweep) mod run_row;
pub(in crate::sweep) mod sweep_svg;
pub(in crate::sweep) mod table;

pub use compact::compact;
pub use lineage::{last_values, Copied, Interval};
pub use pbt_schedule::schedule_text;
pub use rank::{none_completed, rank, ranking, TrialRow, TrialStatus};
pub use run_row::{SweepRow, RETAINED_TOLERANCE, RSS_NOISE_BYTES, RSS_TOLERANCE};
pub use table::{runs_table, table};
