//! Memory, measured and governed: [`MemoryUsage`] figures read from the device's CubeCL pools
//! or from tidemark's own host accounting, pure [`policy`] decisions over them, and the
//! [`Executor`] that is the only code applying those decisions to a device.

mod executor;
mod host;
pub mod oom;
pub mod policy;
mod pools;
mod probe;
mod usage;

pub use executor::{device_total_memory, Applied, Executor};
pub use host::{
    anonymous_resident_bytes, available_host_memory, host_usage, peak_resident_set_bytes,
    reserve_host_heap, reset_host_peak, reset_peak_resident_set, resident_set_bytes,
    trim_host_heap, CountingAllocator, HostCounters, HostReservation,
};
pub use policy::{Attempt, LimitExceeded, MemoryAction, Phase, Policies, RunState};
pub use pools::{device_pool_figures, PoolFigures};
pub use probe::MemoryProbe;
pub use usage::{format_bytes, format_signed_bytes, MemorySource, MemoryUsage};
