//! Taking a lease on a device's directory: under its admission lock, the device's leases read
//! and summed against its budget; a run that does not fit waits in the queue of the waiting
//! (oldest first, a younger one passing only where the older cannot fit, and not for long),
//! or is refused.

use std::time::Duration;

use super::registry::{now_s, Held};
use super::{DeviceDir, Lease, Record, Scan};
use crate::error::{Error, LeaseError};
use crate::memory::format_bytes;
use crate::record::Observer;

/// How often a waiting run looks again: a lease freed by a killed holder is seen within it.
const POLL: Duration = Duration::from_millis(200);

/// How long an older waiting run may be passed by younger ones that fit where it does not.
pub const BACKFILL_S: f64 = 60.0;

/// What a run asks of a device's directory.
pub(crate) struct Ask {
    pub(super) dir: DeviceDir,
    pub(super) budget: u64,
    /// Where the budget was set.
    pub(super) origin: String,
    pub(super) wait: bool,
    /// When the run first asked: its place among the waiting.
    pub(super) since: f64,
    pub(super) command: String,
}

/// A lease asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Want {
    /// These bytes.
    Bytes(u64),
    /// Room to probe one step in: what the largest lease on the device holds, or all the
    /// budget where no run holds one.
    Probe,
}

impl Ask {
    /// Takes the lease, waiting for room (telling `observer` once) unless the run said not to.
    pub(super) fn take(&self, want: Want, observer: &mut dyn Observer) -> Result<Lease, Error> {
        let device = self.dir.device();
        if let Want::Bytes(bytes) = want {
            if bytes > self.budget {
                return Err(Error::Lease(LeaseError::NoRoom {
                    message: format!(
                        "a memory lease of {} on {device} is larger than its whole budget, {}; \
                         raise the budget, or make the run smaller",
                        format_bytes(bytes),
                        format_bytes(self.budget)
                    ),
                }));
            }
        }
        let mut ticket: Option<Held> = None;
        loop {
            let admission = self.dir.admit()?;
            let scan = self.dir.scan()?;
            self.same_budget(&scan)?;
            let held = scan.held();
            let free = self.budget.saturating_sub(held);
            // The most a run on this device holds, as far as the registry knows.
            let largest = scan.leases.iter().map(|l| l.record.bytes).max();
            let (bytes, fits) = match want {
                Want::Bytes(bytes) => (bytes, held + bytes <= self.budget),
                // A probe needs about what a run holds: the largest lease, or all the budget
                // where no run holds one.
                Want::Probe => match largest {
                    None => (free, free > 0),
                    Some(largest) => (largest, free >= largest),
                },
            };
            let now = now_s();
            let mine = ticket.as_ref().map(|t| t.path().to_path_buf());
            let passed = scan.waiting.iter().any(|w| {
                Some(&w.path) != mine.as_ref()
                    && w.record.since < self.since
                    && (held + w.record.bytes <= self.budget || now - w.record.since >= BACKFILL_S)
            });
            if fits && !passed {
                let record = self.record(bytes, want == Want::Probe);
                let held = self.dir.hold("lease", &record)?;
                drop(admission);
                return Ok(Lease { held, bytes });
            }
            let waits_for = match want {
                Want::Bytes(bytes) => bytes,
                Want::Probe => largest.unwrap_or(1).max(1),
            };
            let line = self.waiting_line(want, waits_for, &scan);
            if !self.wait {
                return Err(Error::Lease(LeaseError::NoRoom {
                    message: format!("{line}; memory.wait = false"),
                }));
            }
            if ticket.is_none() {
                observer.message(&line);
                ticket = Some(self.dir.hold("wait", &self.record(waits_for, false))?);
            }
            drop(admission);
            std::thread::sleep(POLL);
        }
    }

    /// Takes a lease of `bytes` in place of `provisional`, at once where the budget holds it
    /// without the provisional one; else gives that one back and waits as a run does.
    pub(super) fn swap(
        &self,
        provisional: Lease,
        bytes: u64,
        observer: &mut dyn Observer,
    ) -> Result<Lease, Error> {
        let admission = self.dir.admit()?;
        let scan = self.dir.scan()?;
        let others = scan.held().saturating_sub(provisional.bytes);
        if others + bytes <= self.budget {
            let held = self.dir.hold("lease", &self.record(bytes, false))?;
            drop(provisional);
            drop(admission);
            return Ok(Lease { held, bytes });
        }
        drop(provisional);
        drop(admission);
        self.take(Want::Bytes(bytes), observer)
    }

    /// Tells the user the lease taken.
    pub(super) fn tell(&self, observer: &mut dyn Observer, bytes: u64, limit: &str) {
        observer.message(&format!(
            "memory lease: {} of {}'s budget of {} ({}), {limit}",
            format_bytes(bytes),
            self.dir.device(),
            format_bytes(self.budget),
            self.origin
        ));
    }

    fn record(&self, bytes: u64, probe: bool) -> Record {
        Record {
            version: 1,
            pid: std::process::id(),
            since: self.since,
            bytes,
            budget: self.budget,
            device: self.dir.device().to_string(),
            command: self.command.clone(),
            probe,
        }
    }

    /// Refuses a budget other than the one the device's runs were admitted under.
    fn same_budget(&self, scan: &Scan) -> Result<(), Error> {
        let other =
            (scan.leases.iter().chain(&scan.waiting)).find(|l| l.record.budget != self.budget);
        match other {
            None => Ok(()),
            Some(other) => Err(Error::Lease(LeaseError::Budget {
                origin: other.path.display().to_string(),
                message: format!(
                    "pid {} holds {} under a budget of {}, and this run's is {}: one device has \
                     one budget",
                    other.record.pid,
                    self.dir.device(),
                    format_bytes(other.record.budget),
                    format_bytes(self.budget)
                ),
            })),
        }
    }

    /// The one line a waiting run says: what it waits for, and who holds what.
    fn waiting_line(&self, want: Want, bytes: u64, scan: &Scan) -> String {
        let device = self.dir.device();
        let what = match want {
            Want::Bytes(_) => format!("a memory lease of {}", format_bytes(bytes)),
            Want::Probe => format!("{} free to probe one step in", format_bytes(bytes)),
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
            format_bytes(self.budget),
            holders.join("; ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::Registry;
    use crate::record::Silent;

    fn ask(dir: &DeviceDir, since: f64) -> Ask {
        Ask {
            dir: dir.clone(),
            budget: 100,
            origin: "test".into(),
            wait: false,
            since,
            command: "test".into(),
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
            dir.hold("wait", &ask(&dir, since).record(bytes, false))
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
    fn one_device_has_one_budget() {
        let (_tmp, dir) = registry();
        let _held = ask(&dir, now_s())
            .take(Want::Bytes(10), &mut Silent)
            .unwrap();
        let other = Ask {
            budget: 200,
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
    }
}
