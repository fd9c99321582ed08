//! `[memory]`.

use super::{choice, Invalid, Result};
use crate::config::defaults;
use crate::config::raw::*;
use crate::config::types::*;

fn size(key: &str, raw: Option<&RawSize>) -> Result<Option<MemorySize>> {
    raw.map(|r| MemorySize::parse(r).map_err(|m| Invalid::new(key, m)))
        .transpose()
}

pub(super) fn memory(raw: RawMemory) -> Result<MemoryConfig> {
    let policy = choice(
        "memory.policy",
        raw.policy.as_deref(),
        defaults::MEMORY_POLICY,
        &[
            ("growth", MemoryPolicyKind::Growth),
            ("preallocate", MemoryPolicyKind::Preallocate),
        ],
    )?;
    let preallocate = size("memory.preallocate", raw.preallocate.as_ref())?;
    // Kept under `growth` too (unused there), so `--set memory.policy=growth` works on a
    // config written for preallocation.
    let preallocate = match policy {
        MemoryPolicyKind::Growth => preallocate,
        MemoryPolicyKind::Preallocate => {
            Some(preallocate.unwrap_or(MemorySize::Fraction(defaults::PREALLOCATE_FRACTION)))
        }
    };
    let limit = size("memory.limit", raw.limit.as_ref())?;
    let on_limit = choice(
        "memory.on_limit",
        raw.on_limit.as_deref(),
        defaults::ON_LIMIT,
        &[
            ("fail", OnLimit::Fail),
            ("shrink", OnLimit::Shrink),
            ("fit", OnLimit::Fit),
        ],
    )?;
    let clear = choice(
        "memory.clear",
        raw.clear.as_deref(),
        defaults::CLEAR,
        &[
            ("never", ClearPolicy::Never),
            ("between_runs", ClearPolicy::BetweenRuns),
            ("every_epoch", ClearPolicy::EveryEpoch),
        ],
    )?;
    let config = MemoryConfig {
        policy,
        preallocate,
        limit,
        on_limit,
        clear,
        snapshot: choice(
            "memory.snapshot",
            raw.snapshot.as_deref(),
            defaults::SNAPSHOT,
            &[("epoch", SnapshotEvery::Epoch)],
        )?,
    };
    consistent(&config)?;
    Ok(config)
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
