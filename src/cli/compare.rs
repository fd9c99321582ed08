//! `tidemark compare`: the config trained under several memory policies, and their costs in
//! one table.

use std::path::PathBuf;

use super::terminal::Terminal;
use super::{out_override, ConfigArgs};
use crate::kinds::Kinds;
use crate::Error;

/// `tidemark compare`: the config under each of `policies`, and the table.
pub(super) fn compare(
    kinds: &Kinds,
    config: ConfigArgs,
    policies: &str,
    out: Option<PathBuf>,
) -> Result<(), Error> {
    let list = crate::compare::ComparePolicy::parse_list(policies)
        .map_err(|e| crate::error::UsageError::new("--policies", e.to_string()))?;
    let resolved = config.load(kinds, out_override(out)?)?;
    let (dir, rows) = crate::compare::compare(kinds, &resolved, &list, |policy| {
        eprintln!("== {}", policy.name());
        Box::new(Terminal::new(true))
    })?;
    outln!("{}", crate::compare::table(&rows));
    outln!(
        "compare: wrote compare.md, compare.json and compare.svg in {}",
        dir.display()
    );
    Ok(())
}
