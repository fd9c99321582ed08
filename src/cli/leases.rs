//! `tidemark leases`: the memory leases of every tidemark run on this machine's devices, with
//! their holders, sizes, ages and what each has used; `--budget DEVICE=SIZE` sets a device's
//! budget for every run on it ([`crate::lease`]).

use std::path::Path;

use crate::config::{DeviceBudget, MemorySize};
use crate::error::{Error, UsageError};
use crate::lease::{Live, Registry, Scan};
use crate::memory::format_bytes;
use crate::record::read_snapshots;

/// Lists the leases, after setting a budget where `budget` gives one.
pub(super) fn leases(budget: Option<&str>) -> Result<(), Error> {
    let registry = match budget {
        Some(text) => {
            // The argument first: a bad one makes no registry.
            let (device, budget) = parse_budget(text)?;
            within_device(text, &device, budget)?;
            let registry = Registry::locate()?;
            let dir = registry.device(&device)?;
            dir.set_budget(budget)?;
            println!(
                "{device}: budget {} for every tidemark run on it ({})",
                budget_text(budget),
                dir.path().join("budget").display()
            );
            Some(registry)
        }
        None => Registry::find()?,
    };
    let Some(registry) = registry else {
        println!("no lease registry: no device has a budget, and no run took a lease");
        return Ok(());
    };
    let devices = registry.devices()?;
    if devices.is_empty() {
        println!("{}: no device has a budget", registry.root().display());
    }
    for dir in devices {
        // Under the admission lock, so that no lease is half taken while it is read.
        let admission = dir.admit()?;
        let scan = dir.scan()?;
        let budget = match scan.leases.first().or(scan.waiting.first()) {
            Some(live) => Some(format_bytes(live.record.budget)),
            None => dir.budget_file()?.map(budget_text),
        };
        drop(admission);
        print!("{}", device_text(dir.device(), budget, &scan));
        let remembered = dir.remembered();
        if remembered > 0 {
            println!(
                "  remembers {remembered} shape(s) of run that completed here, their leases and \
                 times ({}/known-*.json)",
                dir.path().display()
            );
        }
    }
    Ok(())
}

/// A budget as set: `48.0 MiB`, or what `device` means.
fn budget_text(budget: DeviceBudget) -> String {
    match budget {
        DeviceBudget::Size(MemorySize::Bytes(bytes)) => format_bytes(bytes),
        DeviceBudget::Size(MemorySize::Fraction(share)) => format!("{share} of the device"),
        DeviceBudget::Device => "\"device\" (what it has free when its first run asks)".into(),
    }
}

/// `--budget host=16GiB` (or `host=device`): the device and its budget.
fn parse_budget(text: &str) -> Result<(String, DeviceBudget), Error> {
    let refused =
        |message: String| Error::Usage(UsageError::new(format!("--budget {text}"), message));
    let Some((device, size)) = text.split_once('=') else {
        return Err(refused(
            "give DEVICE=SIZE, like host=16GiB or cuda-0=60GiB".into(),
        ));
    };
    let device = device.trim().replace(':', "-");
    let known = device == "host"
        || (device.split_once('-')).is_some_and(|(backend, index)| {
            ["cpu", "cuda", "wgpu"].contains(&backend) && index.parse::<usize>().is_ok()
        });
    if !known {
        return Err(refused(format!(
            "no device \"{device}\": host (flex), or cpu-N, cuda-N, wgpu-N"
        )));
    }
    let budget = crate::lease::parse_budget(size.trim()).map_err(|e| refused(e.0))?;
    Ok((device, budget))
}

/// Refuses a budget in bytes that is larger than the device, where this build can read the
/// device's size: every run on it would be refused later, for a budget set here.
fn within_device(text: &str, device: &str, budget: DeviceBudget) -> Result<(), Error> {
    let DeviceBudget::Size(MemorySize::Bytes(bytes)) = budget else {
        return Ok(());
    };
    let mut config = crate::config::DeviceConfig::default();
    if let Some((backend, index)) = device.split_once('-') {
        let named = crate::config::Backend::ALL
            .into_iter()
            .find(|b| b.name() == backend);
        match (named, index.parse()) {
            (Some(backend), Ok(index)) => (config.backend, config.index) = (backend, index),
            _ => return Ok(()),
        }
    }
    // A backend this build lacks (or a device it cannot open): its size is unknown here.
    let Ok(selected) = crate::backend::select(&config) else {
        return Ok(());
    };
    let source = crate::memory::MemoryMeter::new(&selected).source();
    match crate::memory::device_total_memory(&selected, source) {
        Some(total) if bytes > total => Err(Error::Usage(UsageError::new(
            format!("--budget {text}"),
            format!(
                "{} is larger than the device, {} ({device}); nothing was set",
                format_bytes(bytes),
                format_bytes(total)
            ),
        ))),
        _ => Ok(()),
    }
}

/// A device's lines: its budget and use, then each lease and each waiting run.
fn device_text(device: &str, budget: Option<String>, scan: &Scan) -> String {
    let budget = budget.map_or("no budget".to_string(), |b| format!("budget {b}"));
    let mut text = format!(
        "{device}: {budget}; {} lease(s) hold {}, {} run(s) waiting{}\n",
        scan.leases.len(),
        format_bytes(scan.held()),
        scan.waiting.len(),
        match scan.removed {
            0 => String::new(),
            n => format!("; {n} file(s) of ended runs removed"),
        }
    );
    let now = crate::lease::now_s();
    for live in &scan.leases {
        text.push_str(&format!("  {}\n", lease_line(live, now)));
    }
    for live in &scan.waiting {
        let expected = (live.record.expected_s)
            .map_or(String::new(), |s| format!(", expected to run {s:.0} s"));
        let holding = match live.record.holding {
            0 => String::new(),
            bytes => format!(" (holding {} meanwhile)", format_bytes(bytes)),
        };
        text.push_str(&format!(
            "  waiting: pid {} for {}{holding}, {:.0} s{expected}  {}\n",
            live.record.pid,
            format_bytes(live.record.bytes),
            (now - live.record.since).max(0.0),
            live.record.command
        ));
    }
    text
}

/// One lease: holder, size, age, run directory and what it has used by its snapshots.
fn lease_line(live: &Live, now: f64) -> String {
    let r = &live.record;
    let what = match r.probe {
        true => "probing one step".to_string(),
        false => live
            .run_dir
            .as_deref()
            .map_or("run directory not made yet".to_string(), used),
    };
    format!(
        "pid {}  {}  {:.0} s  {what}  {}",
        r.pid,
        format_bytes(r.bytes),
        (now - r.since).max(0.0),
        r.command
    )
}

/// `runs/a: in use 120 MiB, peak 250 MiB`, from the run's latest snapshot.
fn used(run_dir: &Path) -> String {
    let snapshots = read_snapshots(&run_dir.join("snapshots.jsonl")).unwrap_or_default();
    match snapshots.last() {
        Some(s) => format!(
            "{}: in use {}, peak {}",
            run_dir.display(),
            format_bytes(s.memory.bytes_in_use),
            format_bytes(
                snapshots
                    .iter()
                    .map(|s| s.memory.peak_bytes_in_use)
                    .max()
                    .unwrap_or(0)
            )
        ),
        None => format!("{}: no snapshot yet", run_dir.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_argument_names_a_device_and_a_size() {
        let bytes = |b: u64| DeviceBudget::Size(MemorySize::Bytes(b));
        assert_eq!(
            parse_budget("host=1GiB").unwrap(),
            ("host".into(), bytes(1 << 30))
        );
        assert_eq!(
            parse_budget("cuda:1=2GiB").unwrap(),
            ("cuda-1".into(), bytes(2 << 30))
        );
        assert_eq!(
            parse_budget("cuda-0=device").unwrap(),
            ("cuda-0".into(), DeviceBudget::Device)
        );
        let e = parse_budget("gpu=1GiB").unwrap_err().to_string();
        assert_eq!(
            e,
            "--budget gpu=1GiB: no device \"gpu\": host (flex), or cpu-N, cuda-N, wgpu-N"
        );
        let e = parse_budget("host").unwrap_err().to_string();
        assert!(e.starts_with("--budget host: give DEVICE=SIZE"), "{e}");
        let e = parse_budget("host=0").unwrap_err().to_string();
        assert!(e.starts_with("--budget host=0: must be"), "{e}");
    }
}
