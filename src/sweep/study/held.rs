//! What a worker that packs its device holds ([`Held`]): the trials running in its children,
//! and their timeline, recorded in the study's journal ([`SLOT`], [`PACKED`]) and shown in the
//! worker's `schedule-<worker>.json`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use super::storage::Storage;
use crate::error::Error;
use crate::record::Observer;
use crate::sweep::journal::attrs::{PACKED, SLOT};
use crate::sweep::journal::op::Op;
use crate::sweep::parallel::processes::Child;
use crate::sweep::parallel::timeline::Timeline;
use crate::sweep::space::Trial;

/// A trial training in a child.
pub(super) struct Running {
    pub(super) id: usize,
    pub(super) trial: Trial,
    pub(super) lease: u64,
    pub(super) child: Child,
    pub(super) started: Instant,
}

/// The trials running on the worker's device, and their record.
#[derive(Default)]
pub struct Held {
    pub(super) running: Vec<Running>,
    /// Whether this process has its one-time state, which a lease counts.
    pub(super) warm: bool,
    /// When each trial ran here, under which lease.
    pub(super) timeline: Timeline,
    /// Its file (`schedule-<worker>.json`).
    schedule: PathBuf,
    /// When the live view was last told.
    pub(super) shown: Option<Instant>,
}

impl Held {
    /// Nothing running yet on a device packed with up to `parallel` trials under `budget`,
    /// whose timeline is written to `schedule-<worker>.json` in the sweep directory `dir`; the
    /// budget and the trials at once are recorded in study `study` ([`PACKED`]), for its views.
    pub fn new(
        storage: &Mutex<Storage>,
        dir: &Path,
        study: usize,
        (budget, parallel): (u64, usize),
    ) -> Result<Held, Error> {
        let mut storage = storage.lock().expect("storage");
        let worker = storage.worker().to_string();
        storage.append(&[Op::StudySystemAttr {
            study,
            key: format!("{PACKED}{worker}"),
            value: serde_json::json!({"budget_bytes": budget, "parallel": parallel}),
        }])?;
        let plain = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
        let name: String = (worker.chars())
            .map(|c| if plain(c) { c } else { '_' })
            .collect();
        Ok(Held {
            timeline: Timeline {
                budget_bytes: budget,
                parallel,
                ..Timeline::default()
            },
            schedule: dir.join(format!("schedule-{name}.json")),
            ..Held::default()
        })
    }

    /// The budget the running trials leave.
    pub(super) fn free(&self, budget: u64) -> u64 {
        budget.saturating_sub(self.running.iter().map(|r| r.lease).sum())
    }

    /// Trial `trial`'s runs in this worker's timeline, as the journal keeps them on its record
    /// `id` ([`SLOT`]); none for a trial that has not run here.
    pub(super) fn slot(&self, id: usize, trial: usize) -> Option<Op> {
        let slot = self.timeline.slots.get(&trial)?;
        Some(Op::SystemAttr {
            trial: id,
            key: SLOT.into(),
            value: serde_json::to_value(slot).expect("a slot serialises"),
        })
    }

    /// Writes this worker's timeline, a view of what it records in the journal; one that
    /// cannot be written is told, not a reason to stop training.
    pub(super) fn record_timeline(&self, observer: &mut dyn Observer) {
        if let Err(e) = self.timeline.write(&self.schedule) {
            observer.message(&format!("the schedule was not written: {e}"));
        }
    }
}
