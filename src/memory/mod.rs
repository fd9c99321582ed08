//! Memory, measured: [`MemoryUsage`] figures read from the device's CubeCL pools, or from
//! tidemark's own host accounting where the backend has no pools to report (`flex`).

mod host;
mod probe;
mod usage;

pub use host::{host_usage, reset_host_peak, CountingAllocator, HostCounters};
pub use probe::MemoryProbe;
pub use usage::{format_bytes, MemorySource, MemoryUsage};
