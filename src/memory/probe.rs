//! One interface over the two memory sources.

use burn::tensor::{Device, ExecutionError};

use super::host::{host_usage, reset_host_peak};
use super::usage::{MemorySource, MemoryUsage};

/// Reads [`MemoryUsage`] for one device, from its CubeCL pools when the backend reports them
/// and from host accounting otherwise.
///
/// The host source sees every allocation, so its peak is exact. Pools only report the
/// present, so on CubeCL the peak is the highest figure seen at the points the training loop
/// calls [`observe`](Self::observe) (after each backward pass and optimizer step).
#[derive(Debug, Clone)]
pub struct MemoryProbe {
    device: Device,
    source: MemorySource,
    pool_peak: u64,
}

impl MemoryProbe {
    /// A probe for `device` (autodiff or not; the pools are the inner device's).
    pub fn new(device: &Device) -> Self {
        let device = device.clone().without_autodiff();
        let source = match device.memory_pool_usage() {
            Some(_) => MemorySource::CubeclPool,
            None => MemorySource::Host,
        };
        Self {
            device,
            source,
            pool_peak: 0,
        }
    }

    /// Where this probe's figures come from.
    pub fn source(&self) -> MemorySource {
        self.source
    }

    /// Waits for queued work, then reads the figures. A failed sync is how a device reports an
    /// earlier failure (out-of-memory on CUDA arrives here), so it is returned, not ignored.
    pub fn read(&mut self) -> Result<MemoryUsage, ExecutionError> {
        self.device.sync()?;
        Ok(self.read_now())
    }

    /// Samples the pools without waiting, to keep the peak current. Free on the host source,
    /// whose allocator tracks the peak itself.
    pub fn observe(&mut self) {
        if self.source == MemorySource::CubeclPool {
            self.read_now();
        }
    }

    /// Starts a new peak window at the current figure.
    pub fn reset_peak(&mut self) {
        match self.source {
            MemorySource::Host => reset_host_peak(),
            MemorySource::CubeclPool => {
                self.pool_peak = 0;
                self.read_now();
            }
        }
    }

    fn read_now(&mut self) -> MemoryUsage {
        match self.source {
            MemorySource::Host => host_usage(),
            MemorySource::CubeclPool => {
                let pool = self.device.memory_pool_usage().unwrap_or_default();
                self.pool_peak = self.pool_peak.max(pool.bytes_in_use);
                MemoryUsage {
                    bytes_in_use: pool.bytes_in_use,
                    bytes_reserved: pool.bytes_reserved,
                    peak_bytes_in_use: self.pool_peak,
                    bytes_padding: pool.bytes_padding,
                    source: MemorySource::CubeclPool,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flex_reads_from_host_accounting() {
        let mut probe = MemoryProbe::new(&Device::flex().autodiff());
        assert_eq!(probe.source(), MemorySource::Host);
        probe.reset_peak();
        let usage = probe.read().unwrap();
        assert_eq!(usage.source, MemorySource::Host);
        assert!(usage.bytes_in_use > 0 && usage.bytes_reserved > 0 && usage.peak_bytes_in_use > 0);
    }
}
