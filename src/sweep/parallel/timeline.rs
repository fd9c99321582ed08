//! `schedule-<worker>.json` in a sweep directory, one per worker that packed its device there
//! (all read together): when each trial of a parallel search ran, under which lease, and the
//! budget they shared. Written at
//! every start and end, so that a killed search still says what ran; read back into
//! `sweep.json`'s rows (`lease_bytes`, `started_s`, `ended_s`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::record::{read_json, write_json};

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
    /// The schedule at `path` (an earlier process's, whose slots a resumed search keeps), or
    /// `None` if there is none. One that is there but cannot be read is an error naming it,
    /// never taken for none.
    pub fn read(path: &Path) -> Result<Option<Timeline>, Error> {
        let timeline: Option<Timeline> = read_json(path, "a search's schedule")?;
        if let Some(why) = timeline.as_ref().and_then(Timeline::invalid) {
            let message = format!("not a search's schedule: {why}");
            return Err(crate::record::RecordError::corrupt(path, None, message).into());
        }
        Ok(timeline)
    }

    /// Why a schedule read back is not one a search writes, if it is not: the field and its
    /// value. Each slot is filed under its trial's number, its times are seconds since the
    /// epoch that end after they start, and the trials at once are 1 or more.
    fn invalid(&self) -> Option<String> {
        if self.parallel == 0 {
            return Some("parallel is 0, where a search trains 1 trial or more at once".into());
        }
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

    /// Every slot of every schedule file in `dir` (`schedule.json`, and the `schedule-*.json`
    /// that shards of earlier versions wrote apart), by trial.
    pub fn merged(dir: &Path) -> Result<Timeline, Error> {
        let mut merged = Timeline::default();
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Ok(merged);
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                name.starts_with("schedule") && name.ends_with(".json")
            })
            .collect();
        files.sort();
        for file in files {
            crate::record::names::inside(dir, &file).map_err(|why| {
                let message = format!("{why}; nothing was read or changed");
                crate::record::RecordError::corrupt(&file, None, message)
            })?;
            let one = Timeline::read(&file)?.unwrap_or_default();
            merged.budget_bytes = merged.budget_bytes.max(one.budget_bytes);
            merged.parallel = merged.parallel.max(one.parallel);
            merged.slots.extend(one.slots);
        }
        Ok(merged)
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
    fn workers_schedules_merge_and_count_from_the_earliest_start() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = Timeline {
            budget_bytes: 100,
            parallel: 2,
            ..Timeline::default()
        };
        a.slots.insert(1, slot(1, 50.0));
        a.write(&dir.path().join("schedule-vm-1-aa.json")).unwrap();
        let mut b = a.clone();
        b.slots = BTreeMap::from([(2, slot(2, 20.0))]);
        b.write(&dir.path().join("schedule-vm-2-bb.json")).unwrap();
        let merged = Timeline::merged(dir.path()).unwrap();
        assert_eq!(merged.slots.len(), 2);
        assert_eq!(merged.origin(), Some(20.0));
        assert_eq!((merged.budget_bytes, merged.parallel), (100, 2));
        assert_eq!(Timeline::read(&dir.path().join("none.json")).unwrap(), None);
        std::fs::write(dir.path().join("schedule-vm-2-bb.json"), "{").unwrap();
        let e = Timeline::merged(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("schedule-vm-2-bb.json: not a search's schedule"),
            "{e}"
        );
    }
}
