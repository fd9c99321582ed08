//! `[memory]` beyond its types: `preallocate`'s default under `policy = "preallocate"`, and
//! the keys that each read but not together. The table's keys are [`MemoryConfig`]'s.

use super::{Invalid, Result};
use crate::config::defaults;
use crate::config::raw::RawSize;
use crate::config::types::*;

pub(super) fn memory(memory: MemoryConfig) -> Result<MemoryConfig> {
    size("memory.preallocate", memory.preallocate)?;
    size("memory.limit", memory.limit)?;
    let budget = match memory.device_budget {
        Some(DeviceBudget::Size(size)) => Some(size),
        _ => None,
    };
    size("memory.device_budget", budget)?;
    // Kept under `growth` too (unused there), so `--set memory.policy=growth` works on a
    // config written for preallocation.
    let preallocate = match memory.policy {
        MemoryPolicyKind::Growth => memory.preallocate,
        MemoryPolicyKind::Preallocate => {
            (memory.preallocate).or(Some(MemorySize::Fraction(defaults::PREALLOCATE_FRACTION)))
        }
    };
    let config = MemoryConfig {
        preallocate,
        ..memory
    };
    consistent(&config)?;
    Ok(config)
}

/// Refuses a size set in code that a file's could not be (0 bytes, a share outside (0, 1]),
/// in the file's words: a file's is checked as it is read.
fn size(key: &str, size: Option<MemorySize>) -> Result<()> {
    let written = match size {
        None => return Ok(()),
        Some(MemorySize::Bytes(b)) => RawSize::Bytes(i64::try_from(b).unwrap_or(i64::MAX)),
        Some(MemorySize::Fraction(f)) => RawSize::Fraction(f),
    };
    MemorySize::parse(&written)
        .map(|_| ())
        .map_err(|m| Invalid::new(key, m))
}

/// Refuses keys that each validate but not together: a limit policy without a limit, and
/// what would give a preallocated reservation back or exceed the limit.
fn consistent(config: &MemoryConfig) -> Result<()> {
    let MemoryConfig {
        policy,
        preallocate,
        limit,
        on_limit,
        clear,
        ..
    } = *config;
    if on_limit != OnLimit::Fail && limit.is_none() {
        let name = if on_limit == OnLimit::Shrink {
            "shrink"
        } else {
            "fit"
        };
        return Err(Invalid::new(
            "memory.on_limit",
            format!("= \"{name}\" needs memory.limit to be set"),
        ));
    }
    if on_limit == OnLimit::Fit && policy == MemoryPolicyKind::Preallocate {
        return Err(Invalid::new(
            "memory.on_limit",
            "= \"fit\" probes steps that may not fit and then gives their memory back, which \
             would give a preallocated reservation back too; use memory.policy = \"growth\"",
        ));
    }
    if clear == ClearPolicy::EveryEpoch && policy == MemoryPolicyKind::Preallocate {
        return Err(Invalid::new(
            "memory.clear",
            "= \"every_epoch\" would release the preallocated reservation after each epoch; \
             use \"between_runs\" with memory.policy = \"preallocate\"",
        ));
    }
    if let (
        MemoryPolicyKind::Preallocate,
        Some(MemorySize::Bytes(reserve)),
        Some(MemorySize::Bytes(cap)),
    ) = (policy, preallocate, limit)
    {
        if reserve > cap {
            return Err(Invalid::new(
                "memory.preallocate",
                format_args!(
                    "({}) is larger than memory.limit ({})",
                    MemorySize::Bytes(reserve),
                    MemorySize::Bytes(cap)
                ),
            ));
        }
    }
    Ok(())
}
