//! A population's member at each interval (`method = "pbt"`): the settings it trained the
//! interval with, its value there, and whom it copied there, with the settings it went on
//! with. `sweep.json` holds it for every member; its settings over the epochs are a schedule.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A member at the end of one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// The epoch the interval ends after.
    pub epoch: usize,
    /// Its monitored value there.
    pub value: Option<f64>,
    /// The settings it trained the interval with.
    pub values: BTreeMap<String, toml::Value>,
    /// The member whose checkpoint it copied there, and the settings it went on with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copied: Option<Copied>,
}

/// The settings a member with `lineage` ended with: those it went on with after its last
/// interval (its last copy's, or its own), or `first` where it reached none.
pub fn last_values(
    lineage: &[Interval],
    first: &BTreeMap<String, toml::Value>,
) -> BTreeMap<String, toml::Value> {
    match lineage.last() {
        Some(last) => last
            .copied
            .as_ref()
            .map_or(&last.values, |c| &c.values)
            .clone(),
        None => first.clone(),
    }
}

/// An exploit: the member copied, and the settings the copier went on with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Copied {
    /// The copied member's number.
    pub from: usize,
    /// The settings the copier went on with: the copied member's, perturbed.
    pub values: BTreeMap<String, toml::Value>,
}
