//! Checks a table's keys make as serde reads them: a size above 0, whose error is worded as
//! the config's own (`must be > 0, got -3`) and located at its key by the reader. A table
//! read as it is ([`EmaConfig`](super::EmaConfig), `[device]`, `[run]`, a built-in kind's
//! `[model]`) takes them with `#[serde(deserialize_with = "...")]`.

use serde::{Deserialize, Deserializer};

/// An integer above 0, or the error that says so.
struct Positive(usize);

impl<'de> Deserialize<'de> for Positive {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match i64::deserialize(d)? {
            v if v > 0 => Ok(Positive(v as usize)),
            v => Err(serde::de::Error::custom(format_args!(
                "must be > 0, got {v}"
            ))),
        }
    }
}

/// A size above 0.
pub fn positive<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    Positive::deserialize(d).map(|p| p.0)
}

/// A size above 0, where the key may be left out (with `#[serde(default)]`).
pub fn positive_or_none<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    positive(d).map(Some)
}

/// Counts above 0, where the key may be left out (a schedule's milestones).
pub fn positives_or_none<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<usize>>, D::Error> {
    positives(d).map(Some)
}

/// Sizes above 0 (layer widths, channels), each one's error at its index.
pub fn positives<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<usize>, D::Error> {
    Ok(Vec::<Positive>::deserialize(d)?
        .into_iter()
        .map(|p| p.0)
        .collect())
}
