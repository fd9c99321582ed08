//! `checkpoints/ranking.json`: the best epochs' checkpoints that `checkpoint.keep_best` keeps,
//! best first, so that `best-1`, `best-2`, ... name them. Written atomically, after the newest
//! checkpoint is complete on disk and before any older one is deleted: every checkpoint it
//! lists is whole, at every moment.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::record::{write_atomic, RankedCheckpoint};

/// The file, in a run's `checkpoints/` directory.
pub(super) const RANKING_FILE: &str = "ranking.json";

/// The ranking in the checkpoints directory `dir`: empty where there is none.
pub(super) fn read_ranking(dir: &Path) -> Result<Vec<RankedCheckpoint>, Error> {
    let path = dir.join(RANKING_FILE);
    let run = dir.parent().unwrap_or(dir);
    crate::record::names::inside(run, &path)
        .map_err(|why| Error::checkpoint(&path, format!("{why}; nothing was read or changed")))?;
    let ranking: Vec<RankedCheckpoint> = match std::fs::read(&path) {
        Ok(text) => crate::record::parse_json(&text)
            .map_err(|e| Error::checkpoint(&path, format!("not a ranking of checkpoints: {e}")))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(&path, e)),
    };
    // Each name is joined to the checkpoints' directory, to open, keep or delete by.
    for (i, ranked) in ranking.iter().enumerate() {
        if let Err(why) = super::checkpoint_name(&ranked.name) {
            let message = format!("{i}.name: {:?} is {why}", ranked.name);
            return Err(Error::checkpoint(&path, message));
        }
    }
    Ok(ranking)
}

/// Writes `ranking` in the checkpoints directory `dir`, whole or not at all.
pub(super) fn write_ranking(dir: &Path, ranking: &[RankedCheckpoint]) -> Result<(), Error> {
    let path = dir.join(RANKING_FILE);
    let json = serde_json::to_vec_pretty(ranking).expect("rankings serialise");
    write_atomic(&path, &json).map_err(|e| Error::io(&path, e))
}

/// The best epochs' checkpoints of the run in `run_dir`, best first, where it keeps them.
pub fn best_checkpoints(run_dir: &Path) -> Vec<RankedCheckpoint> {
    read_ranking(&run_dir.join("checkpoints")).unwrap_or_default()
}

/// The directory `best-N` names in `run_dir`'s ranking (`rank` from 1), if there is one.
pub(super) fn ranked_dir(run_dir: &Path, rank: usize) -> Result<Option<PathBuf>, Error> {
    let dir = run_dir.join("checkpoints");
    let ranking = read_ranking(&dir)?;
    Ok((rank.checked_sub(1).and_then(|i| ranking.get(i))).map(|r| dir.join(&r.name)))
}
