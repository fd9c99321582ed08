//! The order of the runs waiting for a lease on one device, decided from their records alone.
//! A run first stands [`GATHER`] in the queue, so that the runs started with it (a shell loop,
//! a job array) are in it too. Then the longest expected goes first (a run whose shape the
//! registry does not remember first of all: its probe is short, and tells its size), then the
//! oldest; a run that has waited [`BACKFILL_S`] goes before every run that asked after it. A
//! run ranked first that does not fit now is passed by those behind it that do, until it has
//! waited [`BACKFILL_S`].

use std::path::Path;
use std::time::Duration;

use super::{Live, Record};

/// How long a run that asks stands in the queue before it may take a lease, so that the runs
/// started with it are in the queue too and the longest of them goes first.
pub const GATHER: Duration = Duration::from_millis(200);

/// How long a waiting run may be passed by runs that asked after it: by longer ones, and by
/// ones that fit where it does not.
pub const BACKFILL_S: f64 = 60.0;

/// Where a run stands in the queue.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Place {
    /// When it first asked, in seconds since the epoch.
    pub since: f64,
    /// How long it is expected to hold its lease, where the registry remembers its shape.
    pub expected_s: Option<f64>,
}

impl Place {
    fn of(record: &Record) -> Place {
        Place {
            since: record.since,
            expected_s: record.expected_s,
        }
    }

    /// Whether this run is ranked after `other`, `now`.
    fn after(self, other: Place, now: f64) -> bool {
        let aged = |since: f64| now - since >= BACKFILL_S;
        if aged(other.since) || aged(self.since) {
            return other.since < self.since;
        }
        let longest = |expected: Option<f64>| expected.unwrap_or(f64::INFINITY);
        match longest(other.expected_s).total_cmp(&longest(self.expected_s)) {
            std::cmp::Ordering::Equal => other.since < self.since,
            order => order.is_gt(),
        }
    }

    /// Whether a run standing here (its own file `mine`) lets one of the `waiting` go first:
    /// one ranked before it that fits now (what all the leases hold, `held`, less what that run
    /// holds itself meanwhile, leaves room in `budget` for what it waits for), or that has
    /// waited [`BACKFILL_S`].
    pub(super) fn gives_way(
        self,
        mine: &Path,
        waiting: &[Live],
        (held, budget): (u64, u64),
        now: f64,
    ) -> bool {
        waiting.iter().any(|w| {
            let room = held.saturating_sub(w.record.holding) + w.record.bytes <= budget;
            w.path != mine
                && self.after(Place::of(&w.record), now)
                && (room || now - w.record.since >= BACKFILL_S)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A waiting run's file: asked at `since`, expected `expected_s`, waiting for `bytes`
    /// while holding `holding`.
    fn waiting(since: f64, expected_s: Option<f64>, bytes: u64, holding: u64) -> Live {
        Live {
            record: Record {
                version: 1,
                pid: 1,
                since,
                bytes,
                budget: 100,
                device: "host".into(),
                command: "test".into(),
                probe: false,
                expected_s,
                holding,
            },
            path: format!("wait-{since}-{bytes}.json").into(),
            run_dir: None,
        }
    }

    /// Whether a run at `me`, with 50 of the budget of 100 held, gives way to `other`.
    fn gives_way(me: Place, other: Live, now: f64) -> bool {
        me.gives_way(Path::new("mine.json"), &[other], (50, 100), now)
    }

    #[test]
    fn among_runs_that_asked_together_the_longest_goes_first_and_after_a_while_the_oldest() {
        let now = 1000.0;
        let me = |expected_s| Place {
            since: now,
            expected_s,
        };
        // A longer run that asked after this one, and fits, goes first ...
        assert!(gives_way(
            me(Some(10.0)),
            waiting(now + 0.1, Some(20.0), 40, 0),
            now
        ));
        // ... and one that does not fit is passed.
        assert!(!gives_way(
            me(Some(10.0)),
            waiting(now + 0.1, Some(20.0), 60, 0),
            now
        ));
        // A shorter one that asked before it does not hold it back.
        assert!(!gives_way(
            me(Some(10.0)),
            waiting(now - 1.0, Some(5.0), 40, 0),
            now
        ));
        // Of two equally long, the older first.
        assert!(gives_way(
            me(Some(10.0)),
            waiting(now - 1.0, Some(10.0), 40, 0),
            now
        ));
        // A run whose shape the registry does not know goes before the longest it knows.
        assert!(gives_way(
            me(Some(1e6)),
            waiting(now + 0.1, None, 40, 0),
            now
        ));
        // Past the backfill's time the oldest goes first, however short, fitting or not ...
        let old = now - BACKFILL_S - 1.0;
        assert!(gives_way(me(None), waiting(old, Some(1.0), 60, 0), now));
        // ... and a run that has waited so long goes before any that asked after it.
        let me_old = Place {
            since: old,
            expected_s: Some(1.0),
        };
        assert!(!gives_way(me_old, waiting(now, None, 40, 0), now));
        // A run's own file is not another's.
        let own = waiting(now + 0.1, Some(20.0), 40, 0);
        let path = own.path.clone();
        assert!(!me(Some(10.0)).gives_way(&path, &[own], (50, 100), now));
    }

    #[test]
    fn a_run_that_waits_holding_a_lease_fits_in_what_it_holds_and_what_is_free() {
        let now = 1000.0;
        let me = Place {
            since: now,
            expected_s: Some(1.0),
        };
        // It waits for 70 holding 30 of the 50 held: 20 + 70 fits in 100.
        assert!(gives_way(me, waiting(now - 1.0, Some(5.0), 70, 30), now));
        // Holding nothing, 50 + 70 does not.
        assert!(!gives_way(me, waiting(now - 1.0, Some(5.0), 70, 0), now));
    }
}
