//! A search's space read from a config file: its `[sweep]` table, checked, and whether its
//! trials fit their micro-batch in their leases.

use super::Space;
use crate::config::{ConfigError, RawFile, RawMemory};

impl Space {
    /// The search `file`'s `[sweep]` table describes, checked, or `None` without one
    /// (`validate` checks it too): an error names the key, located in the file or at the
    /// override that set it. The file is the one read that gives the run's config too
    /// ([`RawFile::config`]).
    pub fn of_file(file: &RawFile) -> Result<Option<Space>, ConfigError> {
        let Some(sweep) = &file.raw.sweep else {
            return Ok(None);
        };
        let mut space = Space::from_raw(sweep).map_err(|e| file.error(&e.key, e.message))?;
        // A finder run by every trial would sweep each one's rate before it trains, outside the
        // search's plan and leases: a search takes a rate, or draws one.
        if file.raw.train.lr.as_ref().is_some_and(|lr| lr.is_find()) {
            let message = "train.lr = \"find\" in a search: give a rate, or vary train.lr in \
                           [sweep.vary] (`tidemark lr-find` suggests where to start)";
            return Err(file.error("train.lr", message.into()));
        }
        space.packing.fit_in_lease = fits_in_lease(&file.raw.memory, &space);
        Ok(Some(space))
    }
}

/// Whether the trials leave `memory.on_limit` unset (in the file, the overrides and the varied
/// keys) and do not preallocate, so that a trial run in parallel fits its micro-batch in its
/// lease instead of failing at the first breach.
fn fits_in_lease(memory: &RawMemory, space: &Space) -> bool {
    let varied = |key: &str| (space.vary.iter()).any(|(k, _)| k == &format!("memory.{key}"));
    let on_limit = memory.on_limit.is_some() || varied("on_limit");
    let preallocates = memory.policy.as_deref() == Some("preallocate") || varied("policy");
    !on_limit && !preallocates
}
