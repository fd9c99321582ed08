//! `tidemark compare`: the same config under several memory policies, one after another, with
//! a table (`compare.md`, `compare.json`) and a chart (`compare.svg`) of what each costs.

use crate::kinds::Kinds;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::{defaults, ClearPolicy, ConfigBuilder, MemorySize, OnLimit, RunConfig};
use crate::error::Error;
use crate::memory::MemorySource;
use crate::record::RunSummary;
use crate::record::{read_snapshots, write_atomic, Event, Observer, Snapshot};
use crate::train::Trainer;

mod chart;
mod shrink;
mod table;

pub use table::table;

use chart::chart;
use shrink::NoShrink;

/// A policy to compare, by the name used on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ComparePolicy {
    /// Allocate on demand.
    Growth,
    /// Reserve up front: `memory.preallocate`, or 125% of what the growth run reserved at most.
    Preallocate,
    /// A limit the run fits in: the config's `memory.limit`, or 125% of the growth run's peak of
    /// the figure limits apply to (in use on the host, reserved in CubeCL pools).
    Limit,
    /// A limit the run does not fit in and half its micro-batch does, with
    /// `on_limit = "shrink"` (`compare/shrink.rs` says how it is sized).
    Shrink,
    /// Growth with `clear = "never"`: nothing released after the run.
    Never,
}

/// What is wrong with a `--policies` list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyListError {
    /// A name that is not a policy.
    #[error("unknown policy \"{0}\" (expected growth, preallocate, limit, shrink, never)")]
    Unknown(String),
    /// No name at all: nothing to compare.
    #[error("no policy named (expected a comma-separated list of growth, preallocate, limit, shrink, never)")]
    Empty,
}

impl ComparePolicy {
    /// Parses a comma-separated list such as `growth,preallocate,limit`.
    pub fn parse_list(text: &str) -> Result<Vec<Self>, PolicyListError> {
        let list = text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|name| match name {
                "growth" => Ok(Self::Growth),
                "preallocate" => Ok(Self::Preallocate),
                "limit" => Ok(Self::Limit),
                "shrink" => Ok(Self::Shrink),
                "never" => Ok(Self::Never),
                other => Err(PolicyListError::Unknown(other.to_string())),
            })
            .collect::<Result<Vec<_>, _>>()?;
        match list.is_empty() {
            true => Err(PolicyListError::Empty),
            false => Ok(list),
        }
    }

    /// The name used on the command line and in the table.
    pub fn name(self) -> &'static str {
        match self {
            Self::Growth => "growth",
            Self::Preallocate => "preallocate",
            Self::Limit => "limit",
            Self::Shrink => "shrink",
            Self::Never => "never",
        }
    }
}

/// How a policy's run ended: written as `completed`, or as the error that stopped it.
#[derive(Debug, Clone, PartialEq)]
pub enum RowStatus {
    /// The run finished.
    Completed,
    /// The run could not start, or stopped, with this error.
    Failed(String),
}

impl std::fmt::Display for RowStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RowStatus::Completed => f.write_str("completed"),
            RowStatus::Failed(e) => f.write_str(&crate::config::one_line(e)),
        }
    }
}

impl Serialize for RowStatus {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// One policy's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    /// The policy.
    pub policy: ComparePolicy,
    /// `completed`, or why the policy did not run or did not finish.
    pub status: RowStatus,
    /// The run directory, if the run started.
    pub run_dir: Option<PathBuf>,
    /// Mean training throughput.
    pub samples_per_sec: Option<f64>,
    /// Highest epoch peak in use.
    pub peak_bytes_in_use: u64,
    /// Highest reserved figure (on the host, the peak resident set).
    pub peak_bytes_reserved: u64,
    /// 1 − peak in use / reserved at the peak: how much of what the run took from the device
    /// (or, on the host, of its peak resident set) held no live data.
    pub fragmentation: Option<f64>,
    /// Bytes in use after the run released its memory, against before it.
    pub retained_bytes_in_use: Option<i64>,
    /// Bytes reserved after the release, against before the run.
    pub retained_bytes_reserved: Option<i64>,
    /// The limit in force, if any.
    pub limit_bytes: Option<u64>,
    /// Final micro-batch (smaller than configured if the limit shrank it).
    pub micro_batch: Option<usize>,
    /// Final validation accuracy.
    pub val_accuracy: Option<f64>,
}

/// The growth run's figures, which the other policies are sized from.
#[derive(Debug, Clone, Copy)]
struct Growth {
    /// The peak of the figure limits apply to (in use on the host, reserved in pools).
    held: u64,
    /// In use at the end of its last epoch.
    rest: u64,
    /// Reserved at its peak.
    reserved: u64,
    /// Where the figures come from.
    source: MemorySource,
}

/// Runs `config` under each of `policies`, inside `<output_dir>/<name>-compare/` (or
/// `-compare-2`, ...: never over another comparison), and writes
/// the table and chart there. The growth run, which sizes the limits, always runs first.
pub fn compare(
    kinds: &Kinds,
    config: &RunConfig,
    policies: &[ComparePolicy],
    mut observer: impl FnMut(ComparePolicy) -> Box<dyn Observer>,
) -> Result<(PathBuf, Vec<CompareRow>), Error> {
    // A directory of its own, as a run's: a second comparison of the config goes beside the
    // first (`-compare-2`), which it overwrote.
    let name = format!("{}-compare", config.run.name);
    let dir = crate::train::run_dir::create(&config.run.output_dir, &name)?;
    let mut order: Vec<ComparePolicy> = vec![ComparePolicy::Growth];
    order.extend(policies.iter().filter(|p| **p != ComparePolicy::Growth));
    let mut growth: Option<Growth> = None;
    let mut rows = Vec::new();
    let mut series = Vec::new();
    for policy in order {
        let outcome = variant(kinds, config, policy, &dir, growth).and_then(|v| match v {
            Ok(builder) => (builder.build().map_err(Error::Config))
                .and_then(|cfg| kinds.train(Trainer::new(cfg).observer(observer(policy))))
                .map(Ok),
            Err(no) => Ok(Err(no)),
        });
        let row = match outcome {
            Ok(Err(no)) => failed_row(policy, &no.to_string()),
            Ok(Ok(summary)) => {
                let path = summary.run_dir.join("snapshots.jsonl");
                let snapshots = read_snapshots(&path)?;
                let row = completed_row(policy, &summary);
                if policy == ComparePolicy::Growth {
                    growth = Some(growth_figures(
                        &summary,
                        &snapshots,
                        row.peak_bytes_reserved,
                    ));
                }
                if policies.contains(&policy) {
                    series.push((policy, summary.limit_bytes, snapshots));
                }
                row
            }
            // A policy the backend cannot apply, or a run the limit stopped, is a result too.
            Err(e @ (Error::Config(_) | Error::Limit(_) | Error::OutOfMemory { .. })) => {
                failed_row(policy, &e.to_string())
            }
            Err(e) => return Err(e),
        };
        if policies.contains(&policy) {
            rows.push(row);
        }
    }
    let json = serde_json::to_vec_pretty(&rows).expect("rows serialise");
    let write = |name: &str, bytes: &[u8]| {
        write_atomic(&dir.join(name), bytes).map_err(|e| Error::io(dir.join(name), e))
    };
    write("compare.json", &json)?;
    write("compare.md", table(&rows).as_bytes())?;
    chart(&series, &config.run.name, &dir.join("compare.svg"))?;
    Ok((dir, rows))
}

/// `config` under `policy`, in `dir`, sized from the growth run where it needs to be; or why
/// the shrink row has no limit to run under.
fn variant(
    kinds: &Kinds,
    config: &RunConfig,
    policy: ComparePolicy,
    dir: &Path,
    growth: Option<Growth>,
) -> Result<Result<ConfigBuilder, NoShrink>, Error> {
    let peak_share = |share: f64| growth.map(|g| MemorySize::Bytes((g.held as f64 * share) as u64));
    let base = ConfigBuilder::from_config(config)
        .name(policy.name())
        .output_dir(dir)
        .growth()
        .no_memory_limit()
        .clear(ClearPolicy::BetweenRuns);
    Ok(Ok(match policy {
        ComparePolicy::Growth => base,
        ComparePolicy::Preallocate => base.preallocate(
            config
                .memory
                .preallocate
                .or(growth.map(|g| MemorySize::Bytes(g.reserved / 4 * 5)))
                .unwrap_or(MemorySize::Fraction(defaults::PREALLOCATE_FRACTION)),
        ),
        ComparePolicy::Limit => match config.memory.limit.or(peak_share(1.25)) {
            Some(limit) => base.memory_limit(limit, OnLimit::Fail),
            None => base,
        },
        // Without a growth run to size it, there is no limit to shrink under, and the
        // builder's validation says so in the row.
        ComparePolicy::Shrink => {
            let mut base = base;
            if let Some(growth) = growth {
                let limit = match shrink::limit(kinds, config, &growth)? {
                    Ok(bytes) => MemorySize::Bytes(bytes),
                    Err(no) => return Ok(Err(no)),
                };
                base = base.memory_limit(limit, OnLimit::Shrink);
            } else {
                base.raw_mut().memory.on_limit = OnLimit::Shrink;
            }
            base
        }
        ComparePolicy::Never => base.clear(ClearPolicy::Never),
    }))
}

/// The growth run's figures that size the other policies.
fn growth_figures(summary: &RunSummary, snapshots: &[Snapshot], peak_reserved: u64) -> Growth {
    let rest = snapshots
        .iter()
        .rfind(|s| s.event == Event::Epoch)
        .map_or(0, |s| s.memory.bytes_in_use);
    // The figure a limit is checked against (`memory::policy::held`): on the host the peak in
    // use, on CubeCL what the pools reserve.
    let held = match summary.memory_source {
        MemorySource::Host => summary.peak_bytes_in_use,
        MemorySource::CubeclPool => summary.peak_bytes_reserved.max(summary.peak_bytes_in_use),
    };
    Growth {
        held,
        rest,
        reserved: peak_reserved,
        source: summary.memory_source,
    }
}

/// The row of a run that completed.
fn completed_row(policy: ComparePolicy, summary: &RunSummary) -> CompareRow {
    // Reserved at the peak: the pools' high-water mark, or on the host the peak resident set
    // (epoch-end RSS misses large blocks glibc already unmapped).
    let peak_reserved = match summary.memory_source {
        MemorySource::Host => summary
            .peak_bytes_reserved
            .max(summary.retained.map_or(0, |r| r.rss_peak_bytes)),
        MemorySource::CubeclPool => summary.peak_bytes_reserved,
    };
    CompareRow {
        policy,
        status: RowStatus::Completed,
        run_dir: Some(summary.run_dir.clone()),
        samples_per_sec: summary.samples_per_sec,
        peak_bytes_in_use: summary.peak_bytes_in_use,
        peak_bytes_reserved: peak_reserved,
        fragmentation: Some(
            1.0 - summary.peak_bytes_in_use.min(peak_reserved) as f64 / peak_reserved.max(1) as f64,
        ),
        retained_bytes_in_use: summary.retained.map(|r| r.retained_bytes_in_use),
        retained_bytes_reserved: summary.retained.map(|r| r.retained_bytes_reserved),
        limit_bytes: summary.limit_bytes,
        micro_batch: Some(summary.micro_batch),
        val_accuracy: summary.metric("val_accuracy"),
    }
}

/// The row of a run that could not run or stopped, saying why.
fn failed_row(policy: ComparePolicy, why: &str) -> CompareRow {
    CompareRow {
        policy,
        status: RowStatus::Failed(why.to_string()),
        run_dir: None,
        samples_per_sec: None,
        peak_bytes_in_use: 0,
        peak_bytes_reserved: 0,
        fragmentation: None,
        retained_bytes_in_use: None,
        retained_bytes_reserved: None,
        limit_bytes: None,
        micro_batch: None,
        val_accuracy: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_lists_parse_and_name_the_bad_one() {
        assert_eq!(
            ComparePolicy::parse_list("growth, preallocate,limit").unwrap(),
            vec![
                ComparePolicy::Growth,
                ComparePolicy::Preallocate,
                ComparePolicy::Limit
            ]
        );
        let err = ComparePolicy::parse_list("growth,magic")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("unknown policy \"magic\""), "{err}");
        for empty in ["", ",", " , "] {
            let err = ComparePolicy::parse_list(empty).unwrap_err();
            assert_eq!(err, PolicyListError::Empty, "{empty:?}");
        }
    }
}
