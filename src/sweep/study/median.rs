//! The median rule across a study's workers (`[sweep.prune] method = "median"` with
//! `--storage`): after each epoch a trial asks the one-machine rule on a record rebuilt from
//! the study's journal, so that the median is over every completed trial of the study, whoever
//! trained it. The trial asks in the process that trains it (the worker's, or the child of a
//! worker that packs its device), reading the journal as it stands then. A pruned trial is
//! PRUNED in the journal with its last value, as Optuna records one, and why in its `reason`.

use std::sync::{Arc, Mutex};

use super::next::ours;
use super::rungs::record_of;
use super::storage::Storage;
use crate::sweep::prune::ReadRecord;

/// Reads the record of study `study` in `storage` (its trials' curves of `monitor`) each time
/// it is asked; `None` when the storage cannot be read now.
pub fn reader(storage: Arc<Mutex<Storage>>, study: usize, monitor: &str) -> ReadRecord {
    let monitor = monitor.to_string();
    Box::new(move || {
        let mut storage = storage.lock().ok()?;
        let journal = storage.sync().ok()?;
        Some(record_of(&monitor, &ours(journal, study)).0)
    })
}
