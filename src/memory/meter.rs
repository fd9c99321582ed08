//! One interface over the two memory sources.

use burn::tensor::{Device, ExecutionError};

use super::host::{host_usage, reset_host_peak, HostCounters};
use super::pools::device_pool_figures;
use super::usage::{MemorySource, MemoryUsage};

/// Reads [`MemoryUsage`] for one device, from its CubeCL pools when the backend reports them
/// and from host accounting otherwise.
///
/// Peaks are kept in two windows: the current *step window*, which limit checks look at, and
/// the epoch, which snapshots report. The host source sees every allocation, so its peaks are
/// exact. Pools only report the present, so on CubeCL a peak is the highest figure seen at the
/// points the training loop calls [`observe`](Self::observe) (after each backward pass and
/// each optimizer update).
#[derive(Debug, Clone)]
pub struct MemoryMeter {
    device: Device,
    source: MemorySource,
    /// CubeCL: highest in-use seen in the step window.
    window_peak: u64,
    /// Highest peak of the closed step windows of this epoch.
    epoch_peak: u64,
}

impl MemoryMeter {
    /// A meter for `device` (autodiff or not; the pools are the inner device's).
    pub fn new(device: &Device) -> Self {
        let device = device.clone().without_autodiff();
        let source = match device_pool_figures(&device) {
            Some(_) => MemorySource::CubeclPool,
            None => MemorySource::Host,
        };
        Self {
            device,
            source,
            window_peak: 0,
            epoch_peak: 0,
        }
    }

    /// Where this meter's figures come from.
    pub fn source(&self) -> MemorySource {
        self.source
    }

    /// The (non-autodiff) device measured.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Waits for queued work, then reads the figures, with the epoch's peak. A failed sync is
    /// how a device reports an earlier failure (out-of-memory on CUDA arrives here), so it is
    /// returned, not ignored.
    pub fn read(&mut self) -> Result<MemoryUsage, ExecutionError> {
        super::synced();
        self.device.sync()?;
        let mut usage = match self.source {
            MemorySource::Host => host_usage(),
            MemorySource::CubeclPool => self.observe(),
        };
        usage.peak_bytes_in_use = usage.peak_bytes_in_use.max(self.epoch_peak);
        Ok(usage)
    }

    /// The figures now, without waiting for the device, with the step window's peak. Cheap:
    /// the host source reads two counters; the pool source asks the device's memory manager,
    /// which answers after the work already submitted.
    pub fn observe(&mut self) -> MemoryUsage {
        match self.source {
            MemorySource::Host => {
                let c = HostCounters::read();
                MemoryUsage {
                    bytes_in_use: c.in_use,
                    bytes_reserved: c.in_use,
                    peak_bytes_in_use: c.peak.max(c.in_use),
                    bytes_padding: 0,
                    source: MemorySource::Host,
                }
            }
            MemorySource::CubeclPool => {
                super::read_pools();
                let pool = device_pool_figures(&self.device).unwrap_or_default();
                self.window_peak = self.window_peak.max(pool.in_use);
                MemoryUsage {
                    bytes_in_use: pool.in_use,
                    bytes_reserved: pool.reserved,
                    peak_bytes_in_use: self.window_peak,
                    bytes_padding: pool.padding,
                    source: MemorySource::CubeclPool,
                }
            }
        }
    }

    /// Closes the step window (its peak still counts for the epoch) and opens a new one: at
    /// the current figure on the host; on pools, at the first figure read in it.
    pub fn begin_window(&mut self) {
        let peak = match self.source {
            MemorySource::Host => self.observe().peak_bytes_in_use,
            // A pool reading waits for the device's thread: the closing window's peak is the
            // highest figure read in it.
            MemorySource::CubeclPool => self.window_peak,
        };
        self.epoch_peak = self.epoch_peak.max(peak);
        self.open_window();
    }

    /// The epoch's peak so far, the open window's included.
    pub fn epoch_peak(&mut self) -> u64 {
        self.observe().peak_bytes_in_use.max(self.epoch_peak)
    }

    /// Both windows restart at the current figure, with `peak` as the epoch's peak so far:
    /// what ran since [`epoch_peak`](Self::epoch_peak) was read counts for nothing.
    pub fn restart_at(&mut self, peak: u64) {
        self.reset_peak();
        self.epoch_peak = peak;
    }

    /// Starts a new epoch: both windows restart at the current figure.
    pub fn reset_peak(&mut self) {
        self.epoch_peak = 0;
        self.open_window();
    }

    fn open_window(&mut self) {
        match self.source {
            MemorySource::Host => reset_host_peak(),
            // The new window's peak is the highest figure read in it, from its first reading
            // on: opening it reads nothing.
            MemorySource::CubeclPool => self.window_peak = 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flex_reads_from_host_accounting() {
        let mut meter = MemoryMeter::new(&Device::flex().autodiff());
        assert_eq!(meter.source(), MemorySource::Host);
        meter.reset_peak();
        let usage = meter.read().unwrap();
        assert_eq!(usage.source, MemorySource::Host);
        assert!(usage.bytes_in_use > 0 && usage.bytes_reserved > 0 && usage.peak_bytes_in_use > 0);
    }

    #[test]
    fn a_closed_window_still_counts_for_the_epoch() {
        let mut meter = MemoryMeter::new(&Device::flex());
        meter.reset_peak();
        let block = std::hint::black_box(vec![1u8; 128 << 20]);
        drop(block);
        assert!(meter.observe().peak_bytes_in_use >= 128 << 20);
        meter.begin_window();
        // The new window starts low (other tests may allocate in parallel, but not 128 MiB
        // at once in every case, so compare with the block, not with zero).
        assert!(
            meter.read().unwrap().peak_bytes_in_use >= 128 << 20,
            "epoch peak kept"
        );
    }
}
