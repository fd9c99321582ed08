//! The limit `compare`'s shrink row runs under: one that the configured micro-batch does not fit
//! in and half of it does, so that the row shows a shrink that works.
//!
//! On the host a limit reads the bytes in use, and halfway between what the growth run held at
//! rest and its peak is such a limit. On a device with pools a limit reads what the pools
//! reserve, which comes in whole pages and does not halve with the micro-batch: the pools can
//! reserve more at a quarter of the micro-batch than the halfway figure (13.2 MiB against
//! 9.9 MiB for the quickstart on wgpu). There, one step is probed at the micro-batch and at
//! half of it, and the limit sits halfway between what the two reserved; where half the
//! micro-batch reserves as much, no limit can show a shrink, and the row says so.

use super::Growth;
use crate::config::RunConfig;
use crate::error::Error;
use crate::kinds::Kinds;
use crate::memory::{format_bytes, MemorySource};

/// Why the pools leave the shrink row no limit: one step at half the micro-batch reserves as
/// much as at the micro-batch. A figure the growth run measured, told in the row.
#[derive(Debug, thiserror::Error)]
#[error(
    "no limit to shrink under: one step at micro-batch {half} reserves {}, as much as at \
     {micro_batch} ({}): the pools' pages, not the micro-batch, set what this model reserves",
    format_bytes(*.reserved),
    format_bytes(*.full)
)]
pub(super) struct NoShrink {
    half: usize,
    micro_batch: usize,
    reserved: u64,
    full: u64,
}

/// The shrink row's limit, in bytes, sized from the growth run of `config`, or why there is
/// none.
pub(super) fn limit(
    kinds: &Kinds,
    config: &RunConfig,
    growth: &Growth,
) -> Result<Result<u64, NoShrink>, Error> {
    match growth.source {
        MemorySource::Host => Ok(Ok(growth.rest + growth.held.saturating_sub(growth.rest) / 2)),
        MemorySource::CubeclPool => pool_limit(kinds, config),
    }
}

/// Halfway between what one step reserves at half the micro-batch and at the micro-batch.
fn pool_limit(kinds: &Kinds, config: &RunConfig) -> Result<Result<u64, NoShrink>, Error> {
    let micro_batch = config.train.batch_size;
    let mut half = config.clone();
    half.train.batch_size = (micro_batch / 2).max(1);
    half.train.accumulation_steps = config.train.accumulation_steps * 2;
    // The half first: pages a probe leaves reserved could only inflate the later one.
    let reserved = reserved(kinds, &half)?;
    let full = self::reserved(kinds, config)?;
    if micro_batch < 2 || reserved >= full {
        return Ok(Err(NoShrink {
            half: half.train.batch_size,
            micro_batch,
            reserved,
            full,
        }));
    }
    Ok(Ok(reserved + (full - reserved) / 2))
}

/// What the pools reserve by the end of one step of `config`.
fn reserved(kinds: &Kinds, config: &RunConfig) -> Result<u64, Error> {
    let probed = kinds.probe(config)?;
    Ok(probed.reserved.unwrap_or(probed.before + probed.step))
}
