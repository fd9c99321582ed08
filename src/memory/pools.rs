//! Device-memory figures from CubeCL's memory report.
//!
//! Burn's `Device::memory_pool_usage` adds up everything CubeCL's memory report lists for a
//! device: each stream's pools, and the memories a runtime keeps beside them for its own use.
//! On wgpu those are two: "Uniform GPU Memory" (kernel launch metadata, on the device) and
//! "Staging CPU Memory" (mapped host buffers that reads are copied through). The second is
//! host memory, and it grows with the largest tensor ever read back (a checkpoint reads every
//! weight), so counting it would show device memory growing when none did. tidemark's
//! CubeCL figures therefore count the pools and every runtime memory that lives on the device,
//! and leave out the ones the runtime names as CPU memory. On CUDA the report has no runtime
//! memories, and the figures equal Burn's.

use burn::tensor::Device;

/// Device-resident pool figures, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolFigures {
    /// Bytes in live slices.
    pub in_use: u64,
    /// Bytes of pages held.
    pub reserved: u64,
    /// Alignment padding inside live slices.
    pub padding: u64,
}

/// The device's pool figures, or `None` on a backend without CubeCL pools (flex).
#[cfg(any(feature = "cuda", feature = "cpu", feature = "wgpu"))]
pub fn device_pool_figures(device: &Device) -> Option<PoolFigures> {
    use burn::backend::DispatchDevice;
    use burn::cubecl::MemoryScope;

    let device = device.clone().without_autodiff();
    let DispatchDevice::Cube(cube) = device.as_dispatch() else {
        return None;
    };
    let report = cube.client().memory_report(MemoryScope::Device);
    let mut figures = PoolFigures::default();
    for stream in &report.streams {
        let device_side = std::iter::once(stream.pools.usage()).chain(
            stream
                .auxiliary
                .iter()
                .filter(|memory| !is_host_memory(&memory.name))
                .map(|memory| memory.pools.usage()),
        );
        for usage in device_side {
            figures.in_use += usage.bytes_in_use;
            figures.reserved += usage.bytes_reserved;
            figures.padding += usage.bytes_padding;
        }
    }
    Some(figures)
}

/// Without a CubeCL backend compiled in, no device has pools.
#[cfg(not(any(feature = "cuda", feature = "cpu", feature = "wgpu")))]
pub fn device_pool_figures(device: &Device) -> Option<PoolFigures> {
    device.memory_pool_usage().map(|usage| PoolFigures {
        in_use: usage.bytes_in_use,
        reserved: usage.bytes_reserved,
        padding: usage.bytes_padding,
    })
}

/// Whether a runtime memory of this name is host memory (wgpu: "Staging CPU Memory").
#[cfg_attr(
    not(any(feature = "cuda", feature = "cpu", feature = "wgpu")),
    allow(dead_code)
)]
fn is_host_memory(name: &str) -> bool {
    name.contains("CPU")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_is_host_memory_and_uniforms_are_not() {
        assert!(is_host_memory("Staging CPU Memory"));
        assert!(!is_host_memory("Uniform GPU Memory"));
    }

    #[test]
    fn flex_has_no_pools() {
        assert_eq!(device_pool_figures(&Device::flex()), None);
    }
}
