//! Memory, measured and controlled: [`MemoryUsage`] figures read from the device's CubeCL
//! pools or from tidemark's own host accounting by the [`MemoryMeter`], pure [`policy`]
//! decisions over them, and the [`Executor`], the only code applying those decisions to a
//! device; [`Control`] holds the three for one device. The [`Breakdown`] of a peak by category
//! and the [`Advice`] on what would lower it are computed here too. Failures are
//! [`MemoryError`]s; the crate's error wraps them.
//!
//! What a training run does with all this (its snapshots, its batch layout, its statistics)
//! is the loop's: [`MemoryGuard`](crate::train::MemoryGuard) and
//! [`RunRecorder`](crate::train::RunRecorder).

mod action;
mod advice;
mod breakdown;
mod control;
mod counts;
mod error;
mod executor;
mod footprint;
mod host;
mod layout;
mod meter;
pub mod oom;
pub mod policy;
mod pools;
mod proc_status;
mod usage;

pub use action::Action;
pub use advice::{Advice, AdviceRecord, Effect, Estimate, Lever, LeverRecord, Peaks};
pub use breakdown::{Breakdown, PeakPhase, StepPeaks};
pub use control::Control;
pub use counts::DeviceCounts;
pub(crate) use counts::{read_pools, synced};
pub use error::MemoryError;
pub use executor::{device_total_memory, Applied, Executor};
pub use footprint::Footprint;
pub use host::{
    host_usage, pool_host_heap, reserve_host_heap, reset_host_peak, trim_host_heap,
    CountingAllocator, HostCounters, HostReservation,
};
pub use layout::{Layout, Offloaded};
pub use meter::MemoryMeter;
pub use policy::{Attempt, LimitExceeded, MemoryAction, Phase, Policies, RunState};
pub use pools::{device_pool_figures, PoolFigures};
pub use proc_status::{
    anonymous_resident_bytes, available_host_memory, peak_resident_set_bytes,
    reset_peak_resident_set, resident_set_bytes,
};
pub use usage::{format_bytes, format_signed_bytes, MemorySource, MemoryUsage};
