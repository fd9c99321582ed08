//! What a loop reads of memory through its guard, outside the run's phases (validation, the
//! advisor's and `fit`'s probes, progress): [`Readings`], the measuring half of the guard,
//! with nothing that decides or records. Named calls, so that no loop reaches into the memory
//! layer's [`Control`](crate::memory::Control).

use super::MemoryGuard;
use crate::error::Error;
use crate::memory::{Control, MemoryUsage};

/// The guard's readings: bytes in use, windows and the epoch's peak.
pub(crate) struct Readings<'a> {
    control: &'a mut Control,
}

impl MemoryGuard {
    /// Memory read through this guard, outside the run's phases.
    pub(crate) fn readings(&mut self) -> Readings<'_> {
        Readings {
            control: &mut self.control,
        }
    }
}

impl Readings<'_> {
    /// Bytes in use now, after waiting for the device.
    pub(crate) fn in_use(&mut self) -> Result<u64, Error> {
        Ok(self.control.read()?.bytes_in_use)
    }

    /// What a limit reads now, after waiting for the device: the bytes in use on the host,
    /// what the pools reserve on a device with pools.
    pub(crate) fn held(&mut self) -> Result<u64, Error> {
        Ok(crate::memory::policy::held(&self.control.read()?).0)
    }

    /// Gives back what is free (after probes that allocated at sizes the run will not use)
    /// and returns the bytes in use after it.
    pub(crate) fn release(&mut self) -> Result<u64, Error> {
        Ok(self.control.release()?.bytes_in_use)
    }

    /// Opens a new window (validation, a probe) at the current figure.
    pub(crate) fn open_window(&mut self) {
        self.control.begin_window();
    }

    /// The figures of the window opened last, after waiting for the device.
    pub(crate) fn window(&mut self) -> Result<MemoryUsage, Error> {
        self.control.read()?;
        Ok(self.control.window())
    }

    /// The figures of the window opened last, without waiting for the device (inside a
    /// backward pass, or after a read that has waited: progress after a step's loss).
    pub(crate) fn peek_window(&mut self) -> MemoryUsage {
        self.control.window()
    }

    /// The epoch's peak so far, to put back with [`restore_epoch_peak`](Self::restore_epoch_peak)
    /// after work whose figures must not count (the advisor's probes).
    pub(crate) fn epoch_peak_so_far(&mut self) -> u64 {
        self.control.meter().epoch_peak()
    }

    /// Restarts the windows at the current figure with `peak` as the epoch's peak: what ran
    /// since [`epoch_peak_so_far`](Self::epoch_peak_so_far) counts for nothing.
    pub(crate) fn restore_epoch_peak(&mut self, peak: u64) {
        self.control.meter().restart_at(peak);
    }
}
