//! A parallel search's timeline: when each trial ran in a child process, under which lease,
//! and the budget they shared. Each worker that packs its device keeps its own, records each
//! trial's [`Slot`] in the study's journal at every start and end (so that a killed search
//! still says what ran), and writes it to `schedule-<worker>.json` in the sweep directory for
//! people; `sweep.json`'s rows (`lease_bytes`, `started_s`, `ended_s`) come from the journal.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::record::write_json;

/// One trial's run in a child process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slot {
    /// The trial number.
    pub trial: usize,
    /// Its lease: the memory limit it ran under, counted against the budget while it ran.
    pub lease_bytes: u64,
    /// When it started, in seconds since the Unix epoch.
    pub started_unix: f64,
    /// When it ended; `None` while it runs.
    pub ended_unix: Option<f64>,
    /// The child's process id (to find it while it runs).
    pub pid: u32,
    /// The trial's runs before this one, `[started_unix, ended_unix]`, where the pruner paused
    /// it between runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier: Vec<[f64; 2]>,
}

/// A parallel search's timeline (`schedule.json`), as one process (or shard) ran it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// The memory all running trials could hold together.
    pub budget_bytes: u64,
    /// Trials at once.
    pub parallel: usize,
    /// Each trial's latest run, by trial number.
    pub slots: BTreeMap<usize, Slot>,
}

/// Seconds since the Unix epoch, now.
pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl Timeline {
    /// Why a timeline read back is not one a search writes, if it is not: the field and its
    /// value. Each slot is filed under its trial's number, and its times are seconds since the
    /// epoch that end after they start.
    pub fn invalid(&self) -> Option<String> {
        let time = |t: f64| t.is_finite() && t >= 0.0;
        for (&number, slot) in &self.slots {
            let at = format!("slots.{number}");
            if slot.trial != number || number == 0 {
                return Some(format!(
                    "{at}.trial is {}, not its slot's trial",
                    slot.trial
                ));
            }
            let runs = (slot.earlier.iter().map(|r| (r[0], Some(r[1]))))
                .chain([(slot.started_unix, slot.ended_unix)]);
            for (start, end) in runs {
                let ordered = end.is_none_or(|end| time(end) && end >= start);
                if !time(start) || !ordered {
                    return Some(format!(
                        "{at}: a run from {start} to {}, not an interval of seconds since the \
                         epoch",
                        end.map_or("now".into(), |e| e.to_string())
                    ));
                }
            }
        }
        None
    }

    /// Writes it to `path`, whole or not at all.
    pub fn write(&self, path: &Path) -> Result<(), Error> {
        Ok(write_json(path, self)?)
    }

    /// Records that `trial` started now in process `pid` under `lease`: its earlier runs (a
    /// trial paused at a rung and promoted runs again) are kept. Returns when.
    pub fn started(&mut self, trial: usize, lease_bytes: u64, pid: u32) -> f64 {
        let mut earlier = Vec::new();
        if let Some(slot) = self.slots.get(&trial) {
            earlier = slot.earlier.clone();
            earlier.extend(slot.ended_unix.map(|end| [slot.started_unix, end]));
        }
        let started_unix = now();
        let slot = Slot {
            trial,
            lease_bytes,
            started_unix,
            ended_unix: None,
            pid,
            earlier,
        };
        self.slots.insert(trial, slot);
        started_unix
    }

    /// Records that `trial`'s run ended now.
    pub fn ended(&mut self, trial: usize) {
        if let Some(slot) = self.slots.get_mut(&trial) {
            slot.ended_unix = Some(now());
        }
    }

    /// The earliest start: where a search's `started_s` count from.
    pub fn origin(&self) -> Option<f64> {
        self.slots
            .values()
            .map(|s| s.earlier.first().map_or(s.started_unix, |r| r[0]))
            .min_by(f64::total_cmp)
    }
}

impl Timeline {
    /// The budget and the trials at once, for a search that ran in parallel (`None` for one
    /// that did not).
    pub fn packed(&self) -> Option<(u64, usize)> {
        (!self.slots.is_empty()).then_some((self.budget_bytes, self.parallel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(trial: usize, started: f64) -> Slot {
        Slot {
            trial,
            lease_bytes: 10,
            started_unix: started,
            ended_unix: Some(started + 1.0),
            pid: 1,
            earlier: Vec::new(),
        }
    }

    #[test]
    fn a_timeline_counts_from_its_earliest_start_and_refuses_times_out_of_order() {
        let mut timeline = Timeline {
            budget_bytes: 100,
            parallel: 2,
            ..Timeline::default()
        };
        timeline.slots.insert(1, slot(1, 50.0));
        timeline.slots.insert(2, slot(2, 20.0));
        assert_eq!(timeline.origin(), Some(20.0));
        assert_eq!(timeline.packed(), Some((100, 2)));
        assert_eq!(timeline.invalid(), None);
        timeline.slots.get_mut(&2).unwrap().ended_unix = Some(10.0);
        let why = timeline.invalid().unwrap();
        assert!(why.starts_with("slots.2: a run from 20 to 10"), "{why}");
        timeline.slots.insert(2, slot(2, 20.0));
        timeline.slots.insert(3, slot(4, 20.0));
        assert!(timeline.invalid().unwrap().contains("slots.3.trial is 4"));
    }
}
