//! Taking a lease on a device's directory: under its admission lock, the device's leases read
//! and summed against its budget; a run that does not fit waits in the queue, in the order
//! `order.rs` gives, or is refused.

use std::time::Duration;

use super::order::{Place, GATHER};
use super::registry::{now_s, Held};
use super::{Budget, DeviceDir, Lease, Record, Scan};
use crate::error::{Error, LeaseError};
use crate::memory::format_bytes;
use crate::record::Observer;

/// How often a waiting run looks again: a lease freed by a killed holder is seen within it.
const POLL: Duration = Duration::from_millis(100);

/// What a run asks of a device's directory.
pub(crate) struct Ask {
    pub(super) dir: DeviceDir,
    pub(super) budget: Budget,
    /// Where the budget was set.
    pub(super) origin: String,
    pub(super) wait: bool,
    /// When the run first asked: its place among the waiting.
    pub(super) since: f64,
    pub(super) command: String,
    /// How long the run is expected to hold its lease, where runs of its shape completed here.
    pub(super) expected_s: Option<f64>,
    /// Its shape's name in the registry (`known.rs`).
    pub(super) shape: String,
}

/// A lease asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Want {
    /// These bytes.
    Bytes(u64),
    /// Room to probe one step in: what the largest lease on the device holds, or all the
    /// budget where no run holds one.
    Probe,
    /// Room to probe one step in, for a run whose shape the registry remembers: the lease
    /// its last run settled on.
    Provisional(u64),
}

impl Ask {
    /// Takes the lease, waiting for room (telling `observer` once) unless the run said not to.
    /// The run first stands [`GATHER`] in the queue; then it takes its lease where the budget
    /// holds it and it need not give way to another (`order.rs`).
    pub(super) fn take(&self, want: Want, observer: &mut dyn Observer) -> Result<Lease, Error> {
        self.queue(want, observer, None, None)
    }

    /// [`take`](Self::take), for a run that may already hold a lease it `keep`s until it has
    /// the new one (counted as its own, not another's), and may already be in the queue
    /// (`ticket`: its file, and the bytes it says).
    fn queue(
        &self,
        want: Want,
        observer: &mut dyn Observer,
        keep: Option<Lease>,
        mut ticket: Option<(Held, u64)>,
    ) -> Result<Lease, Error> {
        let own = keep.as_ref().map_or(0, |l| l.bytes);
        let mut told = false;
        loop {
            let admission = self.dir.admit()?;
            let scan = self.dir.scan()?;
            let budget = self.budget_in(&scan)?;
            if let Want::Bytes(bytes) = want {
                if bytes > budget {
                    return Err(Error::Lease(LeaseError::NoRoom {
                        message: format!(
                            "a memory lease of {} on {} is larger than its whole budget, {}; \
                             raise the budget, or make the run smaller",
                            format_bytes(bytes),
                            self.dir.device(),
                            format_bytes(budget)
                        ),
                    }));
                }
            }
            // What the others hold.
            let held = scan.held().saturating_sub(own);
            let free = budget.saturating_sub(held);
            // The most a run on this device holds, as far as the registry knows.
            let largest = scan.leases.iter().map(|l| l.record.bytes).max();
            let (bytes, fits) = match want {
                Want::Bytes(bytes) | Want::Provisional(bytes) => (bytes, held + bytes <= budget),
                // A probe needs about what a run holds: the largest lease, or all the budget
                // where no run holds one.
                Want::Probe => match largest {
                    None => (free, free > 0),
                    Some(largest) => (largest, free >= largest),
                },
            };
            let waits_for = bytes.max(1);
            let Some((mine, asked)) = ticket.as_ref().map(|(t, b)| (t.path().to_path_buf(), *b))
            else {
                // In the queue first, for the runs started with this one to join it.
                let record = self.waiting(waits_for, budget, own);
                ticket = Some((self.dir.hold("wait", &record)?, waits_for));
                drop(admission);
                std::thread::sleep(GATHER);
                continue;
            };
            let place = Place {
                since: self.since,
                expected_s: self.expected_s,
            };
            let gives_way = place.gives_way(&mine, &scan.waiting, (scan.held(), budget), now_s());
            if fits && !gives_way {
                let record = self.record(bytes, !matches!(want, Want::Bytes(_)), budget);
                let held = self.dir.hold("lease", &record)?;
                drop((ticket, keep));
                drop(admission);
                return Ok(self.lease(held, bytes, budget));
            }
            if asked != waits_for {
                // A probe's room follows the largest lease: the queue reads what it waits for
                // now (a new file, the old one removed after it).
                let record = self.waiting(waits_for, budget, own);
                ticket = Some((self.dir.hold("wait", &record)?, waits_for));
            }
            let line = self.waiting_line(want, waits_for, &scan, budget);
            if !self.wait {
                return Err(Error::Lease(LeaseError::NoRoom {
                    message: format!("{line}; memory.wait = false"),
                }));
            }
            if !told {
                observer.message(&line);
                told = true;
            }
            drop(admission);
            std::thread::sleep(POLL);
        }
    }

    fn lease(&self, held: Held, bytes: u64, budget: u64) -> Lease {
        Lease {
            held,
            bytes,
            budget,
            shape: (self.dir.clone(), self.shape.clone()),
            taken: std::time::Instant::now(),
            from_epoch: 0,
        }
    }

    /// Takes a lease of `bytes` in place of `provisional`, at once where the budget holds it
    /// without the provisional one. Else the run waits for it holding the provisional lease
    /// (its set-up is in it), unless another run already waits so: then it gives its own back
    /// and waits as a run does, so that no two runs hold what the other waits for.
    pub(super) fn swap(
        &self,
        provisional: Lease,
        bytes: u64,
        observer: &mut dyn Observer,
    ) -> Result<Lease, Error> {
        let admission = self.dir.admit()?;
        let scan = self.dir.scan()?;
        let budget = self.budget_in(&scan)?;
        let others = scan.held().saturating_sub(provisional.bytes);
        if others + bytes <= budget {
            let held = self.dir.hold("lease", &self.record(bytes, false, budget))?;
            drop(provisional);
            drop(admission);
            return Ok(self.lease(held, bytes, budget));
        }
        let (keep, ticket) = match scan.waiting.iter().any(|w| w.record.holding > 0) {
            true => {
                drop(provisional);
                (None, None)
            }
            false => {
                let record = self.waiting(bytes, budget, provisional.bytes);
                (
                    Some(provisional),
                    Some((self.dir.hold("wait", &record)?, bytes)),
                )
            }
        };
        drop(admission);
        self.queue(Want::Bytes(bytes), observer, keep, ticket)
    }

    /// Tells the user the lease taken.
    pub(super) fn tell(&self, observer: &mut dyn Observer, lease: &Lease, limit: &str) {
        observer.message(&format!(
            "memory lease: {} of {}'s budget of {} ({}), {limit}",
            format_bytes(lease.bytes),
            self.dir.device(),
            format_bytes(lease.budget),
            self.origin
        ));
    }

    /// A waiting run's record: waiting for `bytes`, holding `holding` meanwhile.
    fn waiting(&self, bytes: u64, budget: u64, holding: u64) -> Record {
        Record {
            holding,
            ..self.record(bytes, false, budget)
        }
    }

    fn record(&self, bytes: u64, probe: bool, budget: u64) -> Record {
        Record {
            version: 1,
            pid: std::process::id(),
            since: self.since,
            bytes,
            budget,
            device: self.dir.device().to_string(),
            command: self.command.clone(),
            probe,
            expected_s: self.expected_s,
            holding: 0,
        }
    }

    /// The device's budget in bytes as its registry stands: this run's, which the runs there
    /// were admitted under too (one device has one budget, else this run is refused); for a
    /// budget read from the device, theirs where any run holds or waits for a lease, else what
    /// the device had free when this run read it.
    fn budget_in(&self, scan: &Scan) -> Result<u64, Error> {
        let mut records = scan.leases.iter().chain(&scan.waiting);
        let budget = match self.budget {
            Budget::Bytes(bytes) => bytes,
            Budget::Device { free } => records.clone().next().map_or(free, |l| l.record.budget),
        };
        match records.find(|l| l.record.budget != budget) {
            None => Ok(budget),
            Some(other) => Err(Error::Lease(LeaseError::Budget {
                origin: other.path.display().to_string(),
                message: format!(
                    "pid {} holds {} under a budget of {}, and this run's is {}: one device has \
                     one budget",
                    other.record.pid,
                    self.dir.device(),
                    format_bytes(other.record.budget),
                    format_bytes(budget)
                ),
            })),
        }
    }

    /// The one line a waiting run says: what it waits for, and who holds what.
    fn waiting_line(&self, want: Want, bytes: u64, scan: &Scan, budget: u64) -> String {
        let device = self.dir.device();
        let what = match want {
            Want::Bytes(_) => format!("a memory lease of {}", format_bytes(bytes)),
            // A run the registry has not seen: its size is what its probe finds, so it waits
            // for as much as the largest run holds; its own limit would lease just that.
            Want::Probe => format!(
                "{} free to probe one step in (the largest lease's room; a memory.limit would \
                 be leased as it is)",
                format_bytes(bytes)
            ),
            Want::Provisional(_) => format!("{} free to probe one step in", format_bytes(bytes)),
        };
        let holders: Vec<String> = (scan.leases.iter())
            .map(|l| {
                let run = l
                    .run_dir
                    .as_ref()
                    .map_or(String::new(), |d| format!(" {}", d.display()));
                format!(
                    "pid {}{run}: {}",
                    l.record.pid,
                    format_bytes(l.record.bytes)
                )
            })
            .collect();
        format!(
            "waiting for {what} on {device}: {} lease(s) hold {} of its {} budget ({})",
            scan.leases.len(),
            format_bytes(scan.held()),
            format_bytes(budget),
            holders.join("; ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::{Registry, BACKFILL_S};
    use crate::record::Silent;

    fn ask(dir: &DeviceDir, since: f64) -> Ask {
        Ask {
            dir: dir.clone(),
            budget: Budget::Bytes(100),
            origin: "test".into(),
            wait: false,
            since,
            command: "test".into(),
            expected_s: None,
            shape: "test".into(),
        }
    }

    /// A registry of its own, and its `host` directory.
    fn registry() -> (tempfile::TempDir, DeviceDir) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Registry::at(tmp.path().join("r"), false).unwrap();
        (tmp, dir.device("host").unwrap())
    }

    /// Why a run asking `want` now, not waiting, is refused.
    fn refused(dir: &DeviceDir, want: Want) -> String {
        no_room(ask(dir, now_s()).take(want, &mut Silent).unwrap_err())
    }

    fn no_room(e: Error) -> String {
        match e {
            Error::Lease(LeaseError::NoRoom { message }) => message,
            e => panic!("not a NoRoom: {e}"),
        }
    }

    #[test]
    fn leases_fit_the_budget_and_go_with_their_holder() {
        let (_tmp, dir) = registry();
        let now = now_s();
        let first = ask(&dir, now).take(Want::Bytes(40), &mut Silent).unwrap();
        assert_eq!(dir.scan().unwrap().held(), 40);
        let line = refused(&dir, Want::Bytes(70));
        assert!(
            line.starts_with("waiting for a memory lease of 70 B on host: 1 lease(s) hold 40 B"),
            "{line}"
        );
        assert!(
            line.contains(&format!("pid {}: 40 B", std::process::id())),
            "{line}"
        );
        // A probe takes what the largest run holds; where that is not free, it waits.
        let probe = ask(&dir, now).take(Want::Probe, &mut Silent).unwrap();
        assert_eq!(probe.bytes(), 40);
        let line = refused(&dir, Want::Probe);
        assert!(
            line.starts_with("waiting for 40 B free to probe one step in"),
            "{line}"
        );
        drop(probe);
        drop(first);
        let scan = dir.scan().unwrap();
        assert_eq!((scan.held(), scan.leases.len()), (0, 0));
        // With no run on the device, a probe takes it all.
        let probe = ask(&dir, now).take(Want::Probe, &mut Silent).unwrap();
        assert_eq!(probe.bytes(), 100);
        drop(probe);
        let whole = ask(&dir, now).take(Want::Bytes(100), &mut Silent).unwrap();
        assert_eq!(whole.bytes(), 100);
        let more = refused(&dir, Want::Bytes(101));
        assert!(
            more.contains("larger than its whole budget, 100 B"),
            "{more}"
        );
    }

    #[test]
    fn a_younger_run_passes_an_older_one_only_where_that_one_cannot_fit_and_not_for_long() {
        let (_tmp, dir) = registry();
        let now = now_s();
        let _held = ask(&dir, now).take(Want::Bytes(60), &mut Silent).unwrap();
        let waiting = |since: f64, bytes: u64| {
            dir.hold("wait", &ask(&dir, since).record(bytes, false, 100))
                .unwrap()
        };
        // An older run waits for 50, which does not fit: a younger 30 goes ahead.
        let older = waiting(now - 5.0, 50);
        let younger = ask(&dir, now).take(Want::Bytes(30), &mut Silent).unwrap();
        drop(younger);
        drop(older);
        // An older run that fits now goes first.
        let older = waiting(now - 5.0, 40);
        refused(&dir, Want::Bytes(30));
        drop(older);
        // One that has waited past the backfill's time is passed no more.
        let _older = waiting(now - BACKFILL_S - 1.0, 50);
        refused(&dir, Want::Bytes(30));
    }

    #[test]
    fn a_provisional_lease_is_told_as_one_and_takes_its_place_in_the_queue_with_it() {
        let (_tmp, dir) = registry();
        let lease = ask(&dir, now_s())
            .take(Want::Provisional(30), &mut Silent)
            .unwrap();
        let scan = dir.scan().unwrap();
        assert_eq!((scan.leases.len(), scan.held()), (1, 30));
        assert!(scan.leases[0].record.probe);
        assert!(
            scan.waiting.is_empty(),
            "its ticket goes with the lease taken"
        );
        drop(lease);
    }

    #[test]
    fn a_waiting_probe_tells_the_queue_the_room_it_waits_for_now() {
        let (_tmp, dir) = registry();
        let waiter = {
            let dir = dir.clone();
            std::thread::spawn(move || {
                let waiting = Ask {
                    wait: true,
                    ..ask(&dir, now_s())
                };
                waiting.take(Want::Probe, &mut Silent).map(|l| l.bytes())
            })
        };
        // Every run waits for these bytes in the queue, its gathering first.
        let waits_for = |bytes: u64| {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            loop {
                let scan = dir.scan().unwrap();
                if scan.waiting.first().map(|w| w.record.bytes) == Some(bytes) {
                    return;
                }
                assert!(std::time::Instant::now() < deadline, "{:?}", scan.waiting);
                std::thread::sleep(Duration::from_millis(5));
            }
        };
        // The device empty as it asks, it gathers to probe in the whole budget ...
        waits_for(100);
        // ... and a run takes 70 meanwhile: it waits for 70 free, and says so.
        let first = dir
            .hold("lease", &ask(&dir, now_s()).record(70, false, 100))
            .unwrap();
        waits_for(70);
        drop(first);
        assert_eq!(waiter.join().unwrap().unwrap(), 100);
    }

    #[test]
    fn a_run_whose_lease_outgrows_its_provisional_one_waits_holding_it_and_only_one_does() {
        let (_tmp, dir) = registry();
        let waiting = |since| Ask {
            wait: true,
            ..ask(&dir, since)
        };
        let other = ask(&dir, now_s())
            .take(Want::Bytes(40), &mut Silent)
            .unwrap();
        let first = waiting(now_s()).take(Want::Probe, &mut Silent).unwrap();
        let second = waiting(now_s()).take(Want::Bytes(20), &mut Silent).unwrap();
        assert_eq!((first.bytes(), second.bytes()), (40, 20));
        // Both outgrow theirs: 70 and 60, where the others leave 60 and 80.
        let swapping = |ask: Ask, provisional: Lease, bytes: u64| {
            std::thread::spawn(move || ask.swap(provisional, bytes, &mut Silent).map(|l| l.bytes()))
        };
        let first = swapping(waiting(now_s()), first, 70);
        let held = |dir: &DeviceDir| {
            let scan = dir.scan().unwrap();
            let holding: Vec<u64> = scan.waiting.iter().map(|w| w.record.holding).collect();
            (scan.held(), holding)
        };
        let until = |want: (u64, Vec<u64>)| {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            loop {
                let now = held(&dir);
                if now == want {
                    return;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "{now:?}, not {want:?}"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
        };
        // The first waits holding its 40 (with the other's 40 and the second's 20).
        until((100, vec![40]));
        let second = swapping(waiting(now_s()), second, 60);
        // The second gives its 20 back: one run waits holding, no more.
        until((80, vec![40, 0]));
        drop(other);
        // The first takes its 70 (the second's 60 cannot fit beside it), then the second.
        assert_eq!(first.join().unwrap().unwrap(), 70);
        assert_eq!(second.join().unwrap().unwrap(), 60);
    }

    #[test]
    fn one_device_has_one_budget() {
        let (_tmp, dir) = registry();
        let _held = ask(&dir, now_s())
            .take(Want::Bytes(10), &mut Silent)
            .unwrap();
        let other = Ask {
            budget: Budget::Bytes(200),
            ..ask(&dir, now_s())
        };
        let e = other
            .take(Want::Bytes(10), &mut Silent)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("under a budget of 100 B, and this run's is 200 B"),
            "{e}"
        );
        // A budget read from the device is the one the device's runs were admitted under ...
        let read = |free: u64| Ask {
            budget: Budget::Device { free },
            ..ask(&dir, now_s())
        };
        let lease = read(500).take(Want::Bytes(80), &mut Silent).unwrap();
        assert_eq!((lease.bytes(), lease.budget), (80, 100));
        drop((lease, _held));
        // ... and, where none holds or waits, what the device had free.
        let lease = read(500).take(Want::Bytes(300), &mut Silent).unwrap();
        assert_eq!(lease.budget, 500);
        assert_eq!(dir.scan().unwrap().leases[0].record.budget, 500);
    }
}
