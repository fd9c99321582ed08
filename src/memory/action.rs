//! What a memory policy did, as a run records it: the `action` of a `memory_action` snapshot.

use serde::{Deserialize, Serialize};

/// What a memory policy did, in a `memory_action` snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Reserved memory up front (`memory.policy = "preallocate"`).
    Reserve,
    /// Gave free memory back (`memory.clear`).
    Cleanup,
    /// Halved the micro-batch after a breach (`on_limit = "shrink"`).
    Shrink,
    /// Probed a step at one micro-batch before the first step (`on_limit = "fit"`): its
    /// snapshot holds the probe's figures.
    Probe,
    /// Chose the micro-batch by probes before the first step (`on_limit = "fit"`).
    Fit,
    /// A breach failed the run (`on_limit = "fail"`).
    Limit,
    /// Moved a part of the step to host memory where a limit needed it
    /// (`train.offload.* = "auto"`).
    Offload,
}

impl Action {
    /// Its name in snapshots and on the terminal.
    pub fn name(self) -> &'static str {
        match self {
            Action::Reserve => "reserve",
            Action::Cleanup => "cleanup",
            Action::Shrink => "shrink",
            Action::Probe => "probe",
            Action::Fit => "fit",
            Action::Limit => "limit",
            Action::Offload => "offload",
        }
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
