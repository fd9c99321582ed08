//! A search's space read from a config file: its `[sweep]` table, checked, and whether its
//! trials fit their micro-batch in their leases.

use super::{Domain, Space};
use crate::config::{ConfigError, MemoryPolicyKind, RawFile};

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
        // search's plan and leases: a search takes a rate, or draws one, in the config or in
        // any list a trial's rate is drawn from (a grid's, random's, TPE's, a population's).
        if file.raw.train.find_lr {
            let message = "train.lr = \"find\" in a search: give a rate, or vary train.lr in \
                           [sweep.vary] (`tidemark lr-find` suggests where to start)";
            return Err(file.error("train.lr", message.into()));
        }
        if finds_lr(&space) {
            let message = "sweep.vary.train.lr: \"find\" is not a rate a trial can be given: the \
                           finder runs outside the search's plan and leases; list rates, or give \
                           a range (`tidemark lr-find` suggests where to start)";
            return Err(file.error("sweep.vary.train.lr", message.into()));
        }
        space.packing.fit_in_lease = fits_in_lease(file, &space);
        Ok(Some(space))
    }
}

/// Whether a trial's `train.lr` may be drawn as the word `"find"`: a range draws numbers, a
/// list what it holds.
fn finds_lr(space: &Space) -> bool {
    (space.vary.iter()).any(|(key, domain)| {
        key == "train.lr"
            && matches!(domain, Domain::Values(values)
                if values.iter().any(|v| v.as_str() == Some("find")))
    })
}

/// Whether the trials leave `memory.on_limit` unset (in the file, the overrides and the varied
/// keys) and do not preallocate, so that a trial run in parallel fits its micro-batch in its
/// lease instead of failing at the first breach.
fn fits_in_lease(file: &RawFile, space: &Space) -> bool {
    let varied = |key: &str| (space.vary.iter()).any(|(k, _)| k == &format!("memory.{key}"));
    let on_limit = file.sets("memory.on_limit") || varied("on_limit");
    let preallocates = file.raw.memory.policy == MemoryPolicyKind::Preallocate || varied("policy");
    !on_limit && !preallocates
}

#[cfg(test)]
mod tests {
    use crate::config::{load_raw, Override};

    /// Whether a search of `memory` (a config's `[memory]` lines), with `sets`, fits each
    /// trial's micro-batch in its lease.
    fn fits(memory: &str, vary: &str, sets: &[&str]) -> bool {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        let text = format!("[memory]\n{memory}\n[sweep.vary]\n\"train.lr\" = [0.1, 0.01]\n{vary}");
        std::fs::write(&path, text).unwrap();
        let sets: Vec<Override> = sets.iter().map(|s| Override::parse(s).unwrap()).collect();
        let file = load_raw(&path, &sets).unwrap();
        let space = super::Space::of_file(&file).unwrap().unwrap();
        space.packing.fit_in_lease
    }

    #[test]
    fn a_search_fits_in_its_leases_only_where_nothing_sets_on_limit_or_preallocates() {
        assert!(fits("", "", &[]));
        assert!(fits("clear = \"never\"", "", &["memory.limit=\"1GiB\""]));
        // `on_limit = "fail"` is its default, but written it is the user's choice: kept.
        assert!(!fits("on_limit = \"fail\"", "", &[]));
        assert!(!fits("", "", &["memory.on_limit=\"fail\""]));
        assert!(!fits(
            "",
            "\"memory.on_limit\" = [\"fail\", \"shrink\"]",
            &[]
        ));
        assert!(!fits("policy = \"preallocate\"", "", &[]));
        assert!(!fits("", "", &["memory.policy=\"preallocate\""]));
    }
}
