//! Memory leases across processes: one device, many runs (docs/design/device-leases.md).
//!
//! Where a device has a budget (`memory.device_budget`, [`BUDGET_VAR`], or the registry's
//! `budget` file that `tidemark leases --budget` writes), every run on it (`tidemark train`, a
//! search's trial, an app's [`Trainer`](crate::Trainer) or [`HandLoop`](crate::HandLoop),
//! the learning-rate finder's copy) takes a lease of what it needs from a registry on the
//! machine that every tidemark process shares, before its first step, and enforces it as its
//! `memory.limit`. A run whose lease the budget cannot hold now waits and says so on one line,
//! or with `memory.wait = false` exits 3 at once. The lease is given back when the run ends,
//! and a holder that dies, however it dies, frees its lease at once: the registry trusts the
//! kernel's file locks, never a file's word or a timeout.
//!
//! A lease's size is the run's `memory.limit` where it names one (a search's parallel trial
//! has its lease there); else one probed step of the run (`train::preflight`) above what the
//! run holds once set up, sized as a search sizes a trial's lease
//! ([`crate::memory::policy::lease_for`]). The probe and the set-up run under a provisional
//! lease the size of the largest on the device (the whole budget where no run holds one): a
//! guess, since the run's size is what the probe finds; a run larger than every other may hold
//! more than it while it probes, and once set up waits for its own lease if the budget cannot
//! hold it at once. Without a budget nothing here runs, and nothing is written.

mod registry;

pub(crate) use registry::now_s;
pub use registry::{DeviceDir, Live, Record, Registry, Scan, LEASES_VAR};

use std::time::Duration;

use crate::config::{Backend, RunConfig};
use crate::error::{Error, LeaseError};
use crate::memory::policy::{lease_for, Measured};
use crate::memory::{device_total_memory, format_bytes, MemoryMeter};
use crate::record::Observer;
use registry::Held;

/// The variable that sets a device's budget: `host=16GiB,cuda-0=60GiB`, or a bare size for
/// every device.
pub const BUDGET_VAR: &str = "TIDEMARK_DEVICE_BUDGET";

/// How often a waiting run looks again: a lease freed by a killed holder is seen within it.
const POLL: Duration = Duration::from_millis(200);

/// How long an older waiting run may be passed by younger ones that fit where it does not.
pub const BACKFILL_S: f64 = 60.0;

/// A run's lease: held until this value is dropped, or the process ends.
#[derive(Debug)]
pub struct Lease {
    held: Held,
    bytes: u64,
}

impl Lease {
    /// Its bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Adds the run's directory to its record, for the view.
    pub(crate) fn note_run_dir(&mut self, run_dir: &std::path::Path) {
        self.held.note_run_dir(run_dir);
    }
}

/// How a run without a `memory.limit` is sized: one probed step's figures.
pub(crate) type Probe<'a> = &'a dyn Fn(&RunConfig) -> Result<Measured, Error>;

/// The registry's name of `config`'s device: `host` on flex (the machine's memory), else
/// `<backend>-<index>`.
pub fn device_name(config: &RunConfig) -> String {
    match config.device.backend {
        Backend::Flex => "host".into(),
        backend => format!("{backend}-{}", config.device.index),
    }
}

/// A run's lease on its way: taken whole where the run names its limit, or, for a run sized by
/// its probe, the probe's figures held under a provisional lease until the run is set up
/// ([`settle`](Leasing::settle)).
pub(crate) enum Leasing {
    /// The run's lease, its `memory.limit`.
    Taken(Lease),
    /// A probed run's.
    Probed {
        ask: Ask,
        provisional: Lease,
        measured: Measured,
    },
}

/// Begins `config`'s run's lease where its device has a budget, waiting for room as the config
/// says. `probe` sizes a run without a limit; `None` (a hand-written loop) refuses one.
/// `Ok(None)`: no budget, no lease, nothing written.
pub(crate) fn begin(
    config: &RunConfig,
    observer: &mut dyn Observer,
    probe: Option<Probe<'_>>,
) -> Result<Option<Leasing>, Error> {
    let Some((budget, origin)) = device_budget(config)? else {
        return Ok(None);
    };
    let name = device_name(config);
    // Refused before the registry is made or read.
    let size = match (config.memory.limit, probe) {
        (Some(limit), _) => Size::Limit(limit),
        (None, Some(probe)) => Size::Probe(probe),
        (None, None) => {
            return Err(Error::Lease(LeaseError::Budget {
                origin,
                message: format!(
                    "a hand-written loop on {name} leases its memory.limit, and this run sets \
                     none; set memory.limit to what it needs"
                ),
            }))
        }
    };
    let device = crate::backend::select(&config.device)?;
    let total = device_total_memory(&device, MemoryMeter::new(&device).source());
    if let Some(total) = total.filter(|&t| budget > t) {
        return Err(Error::Lease(LeaseError::Budget {
            origin,
            message: format!(
                "the budget {} is larger than the device, {} ({name})",
                format_bytes(budget),
                format_bytes(total)
            ),
        }));
    }
    let dir = Registry::locate()?.device(&name)?;
    let ask = Ask {
        dir,
        budget,
        origin,
        wait: config.memory.wait.unwrap_or(true),
        since: now_s(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
    };
    let probe = match size {
        Size::Probe(probe) => probe,
        Size::Limit(limit) => {
            let bytes = limit.resolve(total).ok_or_else(|| {
                Error::Lease(LeaseError::Budget {
                    origin: "memory.limit".into(),
                    message: format!(
                        "a share of the device's memory, which {name} does not tell; give \
                         the limit as a size to lease it"
                    ),
                })
            })?;
            let lease = ask.take(Want::Bytes(bytes), observer)?;
            ask.tell(observer, bytes, "its memory.limit");
            return Ok(Some(Leasing::Taken(lease)));
        }
    };
    let provisional = ask.take(Want::Probe, observer)?;
    let measured = probe(config)?;
    Ok(Some(Leasing::Probed {
        ask,
        provisional,
        measured,
    }))
}

/// What sizes a run's lease: its `memory.limit`, or a probe of its step.
enum Size<'a> {
    Limit(crate::config::MemorySize),
    Probe(Probe<'a>),
}

impl Leasing {
    /// The run's lease once it is set up and holds `held` bytes (what a limit reads): a
    /// probed run's is its probe's step above what it holds, sized as a search's trial's,
    /// taken in place of the lease it probed under. Returns the lease and whether it is to be
    /// enforced as the run's limit (the run names none).
    pub(crate) fn settle(
        self,
        held: u64,
        observer: &mut dyn Observer,
    ) -> Result<(Lease, bool), Error> {
        let (ask, provisional, measured) = match self {
            Leasing::Taken(lease) => return Ok((lease, false)),
            Leasing::Probed {
                ask,
                provisional,
                measured,
            } => (ask, provisional, measured),
        };
        let bytes = lease_for(Measured {
            before: held.max(measured.before),
            ..measured
        });
        let lease = ask.swap(provisional, bytes, observer)?;
        ask.tell(observer, bytes, "the run's memory.limit");
        Ok((lease, true))
    }
}

/// The budget of `config`'s device, if it has one, and where it was set: the config's
/// `memory.device_budget`, [`BUDGET_VAR`], or the registry's `budget` file (read where the
/// registry exists: a look makes nothing).
pub fn device_budget(config: &RunConfig) -> Result<Option<(u64, String)>, Error> {
    let name = device_name(config);
    if let Some(set) = budget_set(config, &name)? {
        return Ok(Some(set));
    }
    let Some(registry) = Registry::find()? else {
        return Ok(None);
    };
    let Some(dir) = registry.existing(&name)? else {
        return Ok(None);
    };
    let path = dir.path().join("budget");
    Ok(dir.budget_file()?.map(|b| (b, path.display().to_string())))
}

/// The budget the config or the environment sets for device `name`, and where.
fn budget_set(config: &RunConfig, name: &str) -> Result<Option<(u64, String)>, Error> {
    if let Some(size) = config.memory.device_budget {
        let device = crate::backend::select(&config.device)?;
        let total = device_total_memory(&device, MemoryMeter::new(&device).source());
        let bytes = size.resolve(total).ok_or_else(|| {
            Error::Lease(LeaseError::Budget {
                origin: "memory.device_budget".into(),
                message: format!(
                    "a share of the device's memory, which {name} does not tell; give a size"
                ),
            })
        })?;
        return Ok(Some((bytes, "memory.device_budget".into())));
    }
    let Some(text) = std::env::var(BUDGET_VAR)
        .ok()
        .filter(|t| !t.trim().is_empty())
    else {
        return Ok(None);
    };
    budget_of(&text, name)
        .map(|b| b.map(|bytes| (bytes, BUDGET_VAR.to_string())))
        .map_err(|message| {
            Error::Lease(LeaseError::Budget {
                origin: format!("{BUDGET_VAR}={text}"),
                message,
            })
        })
}

/// Device `name`'s budget in [`BUDGET_VAR`]'s `text`: its own entry, else a bare size.
fn budget_of(text: &str, name: &str) -> Result<Option<u64>, String> {
    let mut bare = None;
    let mut own = None;
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (device, size) = match entry.split_once('=') {
            Some((device, size)) => (Some(device.trim().replace(':', "-")), size.trim()),
            None => (None, entry),
        };
        let bytes = crate::config::parse_bytes(size)
            .map_err(|e| format!("{}: {}", device.as_deref().unwrap_or("the budget"), e.0))?;
        match device {
            Some(device) if device == name => own = Some(bytes),
            Some(_) => {}
            None => bare = Some(bytes),
        }
    }
    Ok(own.or(bare))
}

/// What a run asks of a device's directory.
pub(crate) struct Ask {
    dir: DeviceDir,
    budget: u64,
    /// Where the budget was set.
    origin: String,
    wait: bool,
    /// When the run first asked: its place among the waiting.
    since: f64,
    command: String,
}

/// A lease asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    /// These bytes.
    Bytes(u64),
    /// Room to probe one step in: what the largest lease on the device holds, or all the
    /// budget where no run holds one.
    Probe,
}

impl Ask {
    /// Takes the lease, waiting for room (telling `observer` once) unless the run said not to.
    fn take(&self, want: Want, observer: &mut dyn Observer) -> Result<Lease, Error> {
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
    fn swap(
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
    fn tell(&self, observer: &mut dyn Observer, bytes: u64, limit: &str) {
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

    #[test]
    fn a_budget_variable_gives_each_device_its_own_or_the_bare_size() {
        let text = "host=1GiB, cuda:0=60GiB";
        assert_eq!(budget_of(text, "host"), Ok(Some(1 << 30)));
        assert_eq!(budget_of(text, "cuda-0"), Ok(Some(60 << 30)));
        assert_eq!(budget_of(text, "wgpu-0"), Ok(None));
        assert_eq!(budget_of("512MiB,host=1GiB", "wgpu-0"), Ok(Some(512 << 20)));
        assert_eq!(budget_of("512MiB,host=1GiB", "host"), Ok(Some(1 << 30)));
        let bad = budget_of("host=lots", "host").unwrap_err();
        assert!(bad.starts_with("host: must be a size"), "{bad}");
    }
}
