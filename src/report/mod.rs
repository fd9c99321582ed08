//! Readers and renderers of what runs leave on disk: the memory picture (`memory.svg`, drawn
//! by the trainer at a run's end and again by `tidemark report`) and the text report of
//! `tidemark report`. The files themselves are written by the training loop
//! (`snapshots.jsonl` and `summary.json`, by [`crate::train`]).

mod error;
mod lr_find_plot;
mod palette;
mod plot;
mod search_picture;
mod search_plot;
mod search_population;
mod search_timeline;
mod svg_file;
mod text;

pub use error::ReportError;
pub use lr_find_plot::{render_lr_find_svg, LrFindPicture};
pub(crate) use plot::{draw_legend, Mark};
pub use plot::{draw_memory_svg, render_memory_svg, PictureOf};
pub use search_picture::{MemberLine, SearchPicture, SearchPoint};
pub use search_plot::render_search_svg;
pub(crate) use svg_file::write_svg;
pub(crate) use text::{axis_label, four_digits};
pub use text::{format_metric, report};
