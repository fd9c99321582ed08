//! A search's own JSON files (its schedule, its pruning record, a child's gate): read back as
//! their type, or written whole or not at all.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{write_atomic, RecordError};

/// The JSON file at `path` as a `T`, or `None` if there is none. One that is there but cannot
/// be read is an error naming it and `what` it should be ("a search's schedule"), never taken
/// for none.
pub fn read_json<T: DeserializeOwned>(path: &Path, what: &str) -> Result<Option<T>, RecordError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(RecordError::io(path, e)),
    };
    parse_json(&bytes)
        .map(Some)
        .map_err(|e| RecordError::corrupt(path, None, format!("not {what}: {e}")))
}

/// Writes `value` to `path` as pretty JSON, whole or not at all.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), RecordError> {
    let bytes = serde_json::to_vec_pretty(value).expect("tidemark's records serialise");
    write_atomic(path, &bytes).map_err(|e| RecordError::io(path, e))
}

/// A JSON file that is not the type it should be: serde's error, with the field it is in
/// where serde knows it (`trials.3.standing: unknown variant ...`).
#[derive(Debug, thiserror::Error)]
#[error("{}{source}", field.as_deref().map(|f| format!("{f}: ")).unwrap_or_default())]
pub struct JsonError {
    /// The field's path, where serde knows it.
    field: Option<String>,
    /// Serde's error, with the line and column.
    source: serde_json::Error,
}

/// `bytes` as a `T`.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, JsonError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        // A segment serde could not name (in a value cut short) is left out.
        let field = e.path().to_string().replace(".?", "");
        JsonError {
            field: (field != ".").then_some(field),
            source: e.into_inner(),
        }
    })?;
    de.end().map_err(|source| JsonError {
        field: None,
        source,
    })?;
    Ok(value)
}
