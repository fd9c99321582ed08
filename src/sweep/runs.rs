//! A sweep of runs (`tidemark sweep --runs N`): one config trained N times with new seeds, one
//! after another in this process, each in its own directory: a search whose trials are the runs
//! ([`Space::repeats`]), so that the one engine trains, records and resumes them, and its
//! table of what each run took and gave back.

use std::path::PathBuf;

use super::results::TrialRow;
use super::space::Space;
use super::study::search_alone;
use crate::config::RunConfig;
use crate::error::Error;
use crate::kinds::Kinds;
use crate::record::Observer;

/// Trains `config` `runs` times with the seeds `run.seed`, `run.seed + 1`, ..., reporting run
/// `i` of `n` to `observer(i, n)`, in `<output_dir>/<name>-sweep/` (`-sweep-2`, ... if that
/// exists), run `i` in `trial-00i`. Its `sweep.json` and `sweep.md` are a search's, ranked by
/// `val_loss`, and `sweep.md` ends with the runs' memory table
/// ([`runs_table`](super::results::runs_table)).
pub fn sweep(
    kinds: &Kinds,
    config: &RunConfig,
    runs: usize,
    observer: impl FnMut(usize, usize) -> Box<dyn Observer>,
) -> Result<(PathBuf, Vec<TrialRow>), Error> {
    let space = Space::repeats(config.run.seed, runs).map_err(Error::Usage)?;
    search_alone(kinds, config, &space, observer)
}
