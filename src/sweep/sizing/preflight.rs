//! Before a search trains: one probed step of each trial this process will train, and the order
//! it trains them in. With `order = "largest_first"` (the default) the trial with the largest
//! step trains first, so that:
//!
//! - a trial too large for the device or the limit is found in the first minutes, not the last;
//! - the process reaches its largest footprint in its first trial, and later trials fit in it.
//!   Each new shape a process trains takes some memory once, for good: the code of the
//!   backend's paths that only larger tensors take, and heap pages split by the allocator. Grown
//!   in one step at the start, the resident set then stays flat (measured in docs/search.md).
//!
//! The probes' figures and the order are written to `preflight.json`. A trial whose probe fails trains last, where its own run
//! reports the error.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::Serialize;

use super::budget::own_limit;
use super::lease::Arranged;
use crate::config::{Backend, RunConfig};
use crate::error::Error;
use crate::kinds::Kinds;
use crate::memory::format_bytes;
use crate::record::{write_atomic, Observer};
use crate::sweep::space::{Order, Trial};
use crate::sweep::trial_config::TrialBuild;
use crate::train::preflight::warm_up;

/// One trial's probe, as `preflight.json` has it.
#[derive(Debug, Serialize)]
struct Probe {
    trial: usize,
    /// One step's peak above the trial's data, in bytes.
    step_bytes: Option<u64>,
    /// The memory lease the trial runs under when trials run in parallel
    /// ([`lease`](super::lease)): from the probe, or the trial's own `memory.limit`.
    #[serde(skip_serializing_if = "Option::is_none")]
    lease_bytes: Option<u64>,
    /// Why it was not probed, or why its probe failed.
    error: Option<String>,
}

/// `todo`, in the order this process trains it: as listed, or (largest first) by one probed
/// step of each trial that has not finished, written to the sweep directory `dir` and told to
/// `observer`. `config` builds a trial's config; each is built when needed and dropped after,
/// so that a long search holds none but the one that trains. With `leases` (trials in
/// parallel), every unfinished trial is probed for its lease.
/// A signal that sets `stop` ends the probes with [`Error::Interrupted`].
pub(in crate::sweep) fn arrange<'a>(
    todo: Vec<&'a Trial>,
    build: TrialBuild<'_>,
    (order, leases): (Order, bool),
    dir: &Path,
    observer: &mut dyn Observer,
    stop: Option<&AtomicBool>,
) -> Result<Vec<Arranged<'a>>, Error> {
    let stopped = || match stop.is_some_and(|s| s.load(Ordering::SeqCst)) {
        true => Err(Error::Interrupted),
        false => Ok(()),
    };
    // Every trial's summary is read here, before any trains: one that cannot be read stops
    // the search before it has replaced anything.
    let unfinished = todo
        .iter()
        .map(|t| {
            Ok(crate::sweep::trial_run::finished(
                &dir.join(t.name()),
                build.config(t)?.train.epochs,
            )?
            .is_none())
        })
        .collect::<Result<Vec<bool>, Error>>()?;
    let few = unfinished.iter().filter(|&&u| u).count() < 2;
    if !leases && (order == Order::Listed || few) {
        return Ok(todo.into_iter().map(|t| (t, None)).collect());
    }
    let started = Instant::now();
    // The probes hold memory as a run does: under a provisional lease where the device has a
    // budget, given back once they are done.
    let probing = match todo.first() {
        Some(first) => crate::lease::probing(&build.config(first)?, observer)?,
        None => None,
    };
    if leases {
        // A lease counts what a fresh process holds before the step: its one-time state too.
        if let Some(first) = todo.first() {
            warm_up(&build.config(first)?)?;
        }
    }
    let mut probed = todo
        .into_iter()
        .zip(unfinished)
        .map(|(trial, unfinished)| {
            stopped()?;
            Ok((
                probe(build.kinds, trial, &build.config(trial)?, unfinished),
                trial,
            ))
        })
        .collect::<Result<Vec<(Probe, &Trial)>, Error>>()?;
    drop(probing);
    stopped()?;
    // Stable, on two significant digits: trials of one size keep their numbers' order; failed
    // probes go last. Listed (probed for leases only), they stay in their numbers' order.
    if order == Order::LargestFirst {
        probed.sort_by_key(|(p, _)| {
            let size = p.step_bytes.map(two_digits);
            (p.error.is_some(), std::cmp::Reverse(size))
        });
    }
    let probes: Vec<&Probe> = probed.iter().map(|(p, _)| p).collect();
    write(dir, &probes)?;
    observer.message(&told(&probes, started.elapsed().as_secs_f64(), order));
    if let Some(line) = not_probed(&probes) {
        observer.message(&line);
    }
    Ok(probed
        .into_iter()
        .map(|(p, trial)| (trial, p.lease_bytes))
        .collect())
}

/// The lease of `trial` with the config `cfg`, probed now (a TPE trial drawn as it starts).
pub(in crate::sweep) fn lease_of(kinds: &Kinds, trial: &Trial, cfg: &RunConfig) -> Option<u64> {
    probe(kinds, trial, cfg, true).lease_bytes
}

/// The probe of one trial; a finished one (kept as it is) is not probed, nor one with a memory
/// limit on a device with pools, which a probe (outside the run's limit) could overrun.
fn probe(kinds: &Kinds, trial: &Trial, cfg: &RunConfig, unfinished: bool) -> Probe {
    let pools = cfg.device.backend != Backend::Flex;
    let result = match (unfinished, pools && cfg.memory.limit.is_some()) {
        (false, _) => Ok(None),
        (true, true) => Err(format!(
            "memory.limit is set on {}, and a probe runs outside the limit",
            cfg.device.backend
        )),
        (true, false) => {
            crate::failpoint::pass("probe");
            kinds.probe(cfg).map(Some).map_err(|e| e.to_string())
        }
    };
    let probed = result.as_ref().ok().copied().flatten();
    let own_limit = own_limit(cfg);
    Probe {
        trial: trial.number,
        step_bytes: probed.map(|p| p.step),
        lease_bytes: probed
            .map(|p| p.lease().min(own_limit.unwrap_or(u64::MAX)))
            .or(own_limit),
        error: result.err(),
    }
}

/// `trial-003, trial-007: not probed (why), so they train last`, or `None` if all were.
fn not_probed(probes: &[&Probe]) -> Option<String> {
    let failed: Vec<&Probe> = probes
        .iter()
        .copied()
        .filter(|p| p.error.is_some())
        .collect();
    let first = failed.first()?;
    let mut names: Vec<String> = failed
        .iter()
        .take(3)
        .map(|p| format!("trial-{:03}", p.trial))
        .collect();
    if failed.len() > 3 {
        names.push(format!("{} more", failed.len() - 3));
    }
    let (which, who) = match failed.len() {
        1 => ("", "it trains"),
        _ => (", for the first", "they train"),
    };
    let why = first.error.as_deref().unwrap_or_default();
    Some(format!(
        "{}: not probed ({why}{which}), so {who} last",
        names.join(", ")
    ))
}

/// `bytes` rounded to two significant digits: probes of one shape differ by a few bytes.
fn two_digits(bytes: u64) -> u64 {
    let digits = bytes.checked_ilog10().unwrap_or(0);
    let unit = 10u64.pow(digits.saturating_sub(1));
    (bytes + unit / 2) / unit * unit
}

fn write(dir: &Path, probes: &[&Probe]) -> Result<(), Error> {
    let path = dir.join("preflight.json");
    let json = serde_json::json!({
        "trained_in_order": probes.iter().map(|p| p.trial).collect::<Vec<_>>(),
        "probes": probes,
    });
    let bytes = serde_json::to_vec_pretty(&json).expect("probes serialise");
    write_atomic(&path, &bytes).map_err(|e| Error::io(&path, e))
}

/// `probed one step of 12 trials in 0.3 s; largest first: trial-009 16.9 MiB ... trial-004
/// 206.0 KiB`: the largest and the smallest.
fn told(probes: &[&Probe], seconds: f64, order: Order) -> String {
    let sized: Vec<String> = probes
        .iter()
        .filter_map(|p| {
            Some(format!(
                "trial-{:03} {}",
                p.trial,
                format_bytes(p.step_bytes?)
            ))
        })
        .collect();
    let shown = match sized.len() {
        0..=2 => sized.join(", "),
        n => format!("{} ... {}", sized[0], sized[n - 1]),
    };
    match sized.len() {
        0 => "no trial could be probed, so they train as listed".to_string(),
        n => {
            let how = match order {
                Order::LargestFirst => "largest first",
                Order::Listed => "in their numbers' order",
            };
            format!("probed one step of {n} trials in {seconds:.1} s; {how}: {shown}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{not_probed, told, two_digits, Order, Probe};

    fn probe(trial: usize, step_bytes: Option<u64>, error: Option<&str>) -> Probe {
        let error = error.map(String::from);
        Probe {
            trial,
            step_bytes,
            lease_bytes: None,
            error,
        }
    }

    #[test]
    fn trials_not_probed_are_named_with_the_first_reason() {
        let why = Some("memory.limit is set on wgpu, and a probe runs outside the limit");
        let one = [probe(2, Some(4 << 20), None), probe(1, None, why)];
        let refs: Vec<&Probe> = one.iter().collect();
        assert_eq!(
            not_probed(&refs).unwrap(),
            "trial-001: not probed (memory.limit is set on wgpu, and a probe runs outside the \
             limit), so it trains last"
        );
        assert!(
            told(&refs, 0.2, Order::LargestFirst).ends_with("; largest first: trial-002 4.0 MiB")
        );
        let all: Vec<Probe> = (1..=5).map(|t| probe(t, None, why)).collect();
        let refs: Vec<&Probe> = all.iter().collect();
        let line = not_probed(&refs).unwrap();
        assert!(
            line.starts_with("trial-001, trial-002, trial-003, 2 more: not probed (memory.limit"),
            "{line}"
        );
        assert!(
            line.ends_with(", for the first), so they train last"),
            "{line}"
        );
        assert_eq!(
            told(&refs, 0.0, Order::LargestFirst),
            "no trial could be probed, so they train as listed"
        );
        assert_eq!(not_probed(&[&one[0]]), None);
    }

    #[test]
    fn probes_are_compared_on_two_significant_digits() {
        assert_eq!(two_digits(1_454_716), 1_500_000);
        assert_eq!(two_digits(1_324_708), 1_300_000);
        assert_eq!(two_digits(205_824), 210_000);
        assert_eq!(two_digits(17_672_680), 18_000_000);
        assert_eq!((two_digits(0), two_digits(7), two_digits(95)), (0, 7, 95));
    }
}
