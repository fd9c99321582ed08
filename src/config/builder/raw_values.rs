//! Validated values as a config file writes them: sizes, lists of sizes, enum names, whole
//! tables. The builder writes these, so that what it builds reads back as the file would.

/// A validated table as the raw one it reads back from (a validated config writes what a
/// file would hold).
pub(super) fn as_raw<T: serde::Serialize, R: serde::de::DeserializeOwned>(validated: &T) -> R {
    let value = toml::Value::try_from(validated).expect("a validated table serialises");
    value
        .try_into()
        .expect("a validated table reads back as a raw one")
}

/// The name a config file gives `value`, one of the config's enums (`"between_runs"`).
pub(super) fn name_of<T: serde::Serialize>(value: T) -> String {
    match toml::Value::try_from(value) {
        Ok(toml::Value::String(name)) => name,
        other => panic!("a config enum serialises as its name, got {other:?}"),
    }
}
