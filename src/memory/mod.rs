//! Memory, measured and governed: [`MemoryUsage`] figures read from the device's CubeCL pools
//! or from tidemark's own host accounting, pure [`policy`] decisions over them, the
//! [`Executor`] that is the only code applying those decisions to a device, and the
//! [`Governor`] that runs them over a training run and writes `snapshots.jsonl`. A hand-written
//! training loop uses the [`Governor`] directly.

mod advice;
mod breakdown;
mod executor;
mod governor;
mod growth;
mod host;
mod observer;
pub mod oom;
pub mod policy;
mod pools;
mod probe;
mod snapshots;
mod trace;
mod usage;

pub use advice::{Advice, AdviceRecord, Effect, Estimate, Lever, LeverRecord, Peaks};
pub use breakdown::{Breakdown, Footprint, PeakPhase, StepPeaks};
pub use executor::{device_total_memory, Applied, Executor};
pub use governor::{Breach, EpochFigures, Governor, Layout, StepCheck};
pub use growth::{check_growth, GrowthAlarm};
pub use host::{
    anonymous_resident_bytes, available_host_memory, host_usage, peak_resident_set_bytes,
    pool_host_heap, reserve_host_heap, reset_host_peak, reset_peak_resident_set,
    resident_set_bytes, trim_host_heap, CountingAllocator, HostCounters, HostReservation,
};
pub use observer::{EpochProgress, Observer, Silent, Warning};
pub use policy::{Attempt, LimitExceeded, MemoryAction, Phase, Policies, RunState};
pub use pools::{device_pool_figures, PoolFigures};
pub use probe::MemoryProbe;
pub use snapshots::{
    as_it_stands, current_epochs, read_snapshots, write_atomic, Event, Retained, Snapshot,
    SnapshotWriter,
};
pub use trace::{StepSample, StepTrace, POINTS_PER_EPOCH};
pub use usage::{format_bytes, format_signed_bytes, MemorySource, MemoryUsage};
