//! The keys of a program's own model kind: `[model]` of a kind that is not built in is set
//! aside before the config's types read the file (its keys are the kind's to check), and kept
//! as written in [`AppModel`](super::AppModel).

use super::raw::RawConfig;
use super::types::RunConfig;
use super::validate::Invalid;

/// A program's own check of a validated config (its model kinds': `model.kind` is one it
/// knows, the kind's keys are right), whose error's key is located as the config's own are.
pub type Check<'a> = &'a dyn Fn(&RunConfig) -> Result<(), Invalid>;

/// `table` in the config's types, the keys of a program's own model kind set aside
/// ([`split_app_model`]).
pub(crate) fn raw_config(
    mut table: toml::Table,
) -> Result<RawConfig, serde_path_to_error::Error<toml::de::Error>> {
    let app = split_app_model(&mut table);
    let mut raw: RawConfig = serde_path_to_error::deserialize(toml::Value::Table(table))?;
    raw.model.app = app;
    Ok(raw)
}

/// Takes the keys of `[model]` (but `kind`) out of `table` where its kind is not a built-in
/// one: a program's kind has keys of its own, which it checks itself.
pub fn split_app_model(table: &mut toml::Table) -> Option<toml::Table> {
    let model = table.get_mut("model")?.as_table_mut()?;
    let kind = model.get("kind")?.as_str()?;
    if super::validate::BUILTIN_KINDS.contains(&kind) {
        return None;
    }
    let kind = model.remove("kind")?;
    let settings = std::mem::take(model);
    model.insert("kind".into(), kind);
    Some(settings)
}
