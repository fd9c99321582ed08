//! Validated values as a config file writes them: enum names, for the tables still read as
//! written (`[train]`, `[data]`). The builder writes these, so that what it builds reads back
//! as the file would.

/// The name a config file gives `value`, one of the config's enums (`"between_runs"`).
pub(super) fn name_of<T: serde::Serialize>(value: T) -> String {
    match toml::Value::try_from(value) {
        Ok(toml::Value::String(name)) => name,
        other => panic!("a config enum serialises as its name, got {other:?}"),
    }
}
