//! Readers and renderers of what runs leave on disk: the memory picture (`memory.svg`) and the
//! text report of `tidemark report`. The files themselves are written by the layers below
//! (`snapshots.jsonl` by [`crate::memory`], `summary.json` by [`crate::train`]).

mod plot;
mod text;

pub use crate::memory::{
    check_growth, read_snapshots, write_atomic, Event, GrowthAlarm, Retained, Snapshot,
};
pub use crate::train::{RunStatus, RunSummary};
pub(crate) use plot::draw_memory_svg;
pub use plot::{render_memory_svg, PictureOf};
pub use text::{format_metric, report};
