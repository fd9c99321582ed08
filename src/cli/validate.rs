//! `tidemark validate`: the config resolved, after every check a run or a search makes before
//! it writes anything.

use super::{sweep, ConfigArgs};
use crate::config;
use crate::kinds::Kinds;
use crate::Error;

/// `tidemark validate`: the resolved config, after every check `sweep` makes before it writes
/// anything.
pub(super) fn validate(kinds: &Kinds, config: ConfigArgs) -> Result<(), Error> {
    let (file, resolved) = super::load_file(kinds, &config.config, &config.overrides, vec![])?;
    if let Some(space) = sweep::search_space(file, None, None)? {
        crate::sweep::check_search(kinds, &resolved, &space)?;
    }
    outln!("{}: ok", config.config.display());
    out!("{}", config::to_toml(&resolved));
    Ok(())
}
