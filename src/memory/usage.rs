//! The figures every memory decision and snapshot is made from.

use serde::{Deserialize, Serialize};

/// Where a [`MemoryUsage`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemorySource {
    /// CubeCL's device memory pools (`cuda`, `cpu`, `wgpu`), from the runtime's memory report
    /// without its host-side staging memory (see `memory::device_pool_figures`).
    #[serde(rename = "cubecl-pool")]
    CubeclPool,
    /// tidemark's host accounting: the counting allocator for bytes in use, the process's
    /// resident set for bytes reserved.
    #[serde(rename = "host")]
    Host,
}

impl std::fmt::Display for MemorySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MemorySource::CubeclPool => "cubecl-pool",
            MemorySource::Host => "host",
        })
    }
}

/// Memory held by a device at one moment, plus the high-water mark since the last reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryUsage {
    /// Bytes in live allocations (tensors, and on the host everything else the process holds).
    pub bytes_in_use: u64,
    /// Bytes reserved from the system: pool pages on CubeCL, the resident set on the host.
    /// At least `bytes_in_use`.
    pub bytes_reserved: u64,
    /// Highest `bytes_in_use` since the last peak reset.
    pub peak_bytes_in_use: u64,
    /// Bytes of alignment padding inside live allocations (0 where unknown).
    pub bytes_padding: u64,
    /// Where these figures came from.
    pub source: MemorySource,
}

/// Formats a byte count with a binary unit: `37.2 MiB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Formats a signed byte difference: `+9.1 KiB`, `-1.0 MiB`, `+0 B`.
pub fn format_signed_bytes(bytes: i64) -> String {
    let sign = if bytes < 0 { "-" } else { "+" };
    format!("{sign}{}", format_bytes(bytes.unsigned_abs()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_format_with_binary_units() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(1536), "1.5 KiB");
        assert_eq!(format_bytes(39_007_846), "37.2 MiB");
        assert_eq!(format_signed_bytes(-1 << 20), "-1.0 MiB");
        assert_eq!(format_signed_bytes(0), "+0 B");
    }

    #[test]
    fn source_serialises_as_documented() {
        assert_eq!(
            serde_json::to_string(&MemorySource::CubeclPool).unwrap(),
            "\"cubecl-pool\""
        );
        assert_eq!(
            serde_json::to_string(&MemorySource::Host).unwrap(),
            "\"host\""
        );
    }
}
