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
//! lease: the one the registry remembers for the run's shape (`known.rs`), else the size of
//! the largest on the device (the whole budget where no run holds one), a guess, since the
//! run's size is what the probe finds; a run larger than every other may hold more than it
//! while it probes, and once set up waits for its own lease, holding the provisional one, if
//! the budget cannot hold it at once (one such run at a time: `admit.rs`). A search's parent
//! probes its trials under such a lease too (`probing`). Without a budget nothing here runs,
//! and nothing is written.

mod admit;
mod budget;
mod known;
mod order;
mod registry;

pub(crate) use budget::parse_budget;
pub use budget::{device_budget, Budget, BUDGET_VAR};
pub use known::Known;
pub use order::{BACKFILL_S, GATHER};
pub(crate) use registry::now_s;
pub use registry::{DeviceDir, Live, Record, Registry, Scan, LEASES_VAR};

use crate::config::{Backend, RunConfig};
use crate::error::{Error, LeaseError};
use crate::memory::policy::{lease_for, Measured};
use crate::memory::{device_total_memory, format_bytes, MemoryMeter};
use crate::record::Observer;
use admit::{Ask, Want};
use registry::Held;

/// A run's lease: held until this value is dropped, or the process ends.
#[derive(Debug)]
pub struct Lease {
    held: Held,
    bytes: u64,
    /// The device's budget it was taken under.
    budget: u64,
    /// Where its run's shape is remembered, and under what name (`known.rs`).
    shape: (DeviceDir, String),
    /// When it was taken, and the epoch its run stood at then.
    taken: std::time::Instant,
    from_epoch: usize,
}

impl Lease {
    /// Its bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The device's budget it was taken under.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// Adds the run's directory to its record, for the view, and the epoch the run starts
    /// from (a resumed run's), for its time an epoch.
    pub(crate) fn note_run(&mut self, run_dir: &std::path::Path, epoch: usize) {
        self.held.note_run_dir(run_dir);
        self.from_epoch = epoch;
    }

    /// Remembers, for the next run of its shape, this lease and its time an epoch, the run
    /// having completed at `epoch`. A registry that cannot take it loses a hint, not the run.
    pub(crate) fn remember(&self, epoch: usize) {
        let epochs = epoch.saturating_sub(self.from_epoch);
        if epochs == 0 {
            return;
        }
        let known = Known {
            version: 1,
            bytes: self.bytes,
            seconds_per_epoch: self.taken.elapsed().as_secs_f64() / epochs as f64,
        };
        let (dir, shape) = &self.shape;
        let _ = dir.remember(shape, &known);
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
        ask: Box<Ask>,
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
    let (ask, known, total) = ask_under(config, budget, origin)?;
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
            ask.tell(observer, &lease, "its memory.limit");
            return Ok(Some(Leasing::Taken(lease)));
        }
    };
    // A run of a shape the registry remembers probes under what it leased last time.
    let want = match known.filter(|k| k.bytes <= budget.bytes()) {
        Some(known) => Want::Provisional(known.bytes),
        None => Want::Probe,
    };
    let provisional = ask.take(want, observer)?;
    let measured = probe(config)?;
    Ok(Some(Leasing::Probed {
        ask: Box::new(ask),
        provisional,
        measured,
    }))
}

/// A provisional lease for a search's parent to probe its trials in (`config` one of theirs),
/// where their device has a budget: the room of the largest lease on the device, or all the
/// budget where no run holds one, given back when dropped. `Ok(None)`: no budget.
pub(crate) fn probing(
    config: &RunConfig,
    observer: &mut dyn Observer,
) -> Result<Option<Lease>, Error> {
    let Some((budget, origin)) = device_budget(config)? else {
        return Ok(None);
    };
    let (ask, _, _) = ask_under(config, budget, origin)?;
    ask.take(Want::Probe, observer).map(Some)
}

/// What `config`'s run asks of its device's registry under `budget` (set at `origin`), with
/// what the registry remembers of its shape and the device's memory: a budget in bytes larger
/// than the device is refused.
fn ask_under(
    config: &RunConfig,
    budget: Budget,
    origin: String,
) -> Result<(Ask, Option<Known>, Option<u64>), Error> {
    let name = device_name(config);
    let device = crate::backend::select(&config.device)?;
    let total = device_total_memory(&device, MemoryMeter::new(&device).source());
    let origin = match budget {
        Budget::Bytes(bytes) => match total.filter(|&t| bytes > t) {
            Some(total) => {
                return Err(Error::Lease(LeaseError::Budget {
                    origin,
                    message: format!(
                        "the budget {} is larger than the device, {} ({name})",
                        format_bytes(bytes),
                        format_bytes(total)
                    ),
                }))
            }
            None => origin,
        },
        Budget::Device { .. } => format!("{origin}: what {name} had free as its first run asked"),
    };
    let dir = Registry::locate()?.device(&name)?;
    let shape = known::shape_of(config);
    let known = dir.known(&shape);
    let ask = Ask {
        dir,
        budget,
        origin,
        wait: config.memory.wait.unwrap_or(true),
        since: now_s(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        expected_s: known.map(|k| k.seconds_per_epoch * config.train.epochs as f64),
        shape,
    };
    Ok((ask, known, total))
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
        ask.tell(observer, &lease, "the run's memory.limit");
        Ok((lease, true))
    }
}
