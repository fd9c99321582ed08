//! How a governor writes: a snapshot line, and a memory action as one.

use super::Governor;
use crate::error::Error;
use crate::memory::resident_set_bytes;
use crate::memory::MemoryUsage;
use crate::record::Action;
use crate::record::{Event, Snapshot};

impl Governor {
    pub(super) fn memory_event(
        &mut self,
        epoch: usize,
        action: Action,
        detail: String,
    ) -> Result<(), Error> {
        self.stats.memory_actions += 1;
        let usage = self.control.probe().observe();
        self.snapshot(Event::MemoryAction, epoch, usage, |s| {
            s.action = Some(action);
            s.detail = Some(detail);
        })
    }

    pub(super) fn snapshot(
        &mut self,
        event: Event,
        epoch: usize,
        memory: MemoryUsage,
        fill: impl FnOnce(&mut Snapshot),
    ) -> Result<(), Error> {
        if event != Event::MemoryAction {
            self.stats.peak_bytes_in_use =
                self.stats.peak_bytes_in_use.max(memory.peak_bytes_in_use);
            self.stats.peak_bytes_reserved =
                self.stats.peak_bytes_reserved.max(memory.bytes_reserved);
        }
        let mut snapshot = Snapshot {
            step: self.step,
            rss_bytes: resident_set_bytes(),
            micro_batch: self.layout.micro_batch(),
            accumulation_steps: self.layout.micro_steps(),
            elapsed_s: self.started.elapsed().as_secs_f64(),
            ..Snapshot::new(event, epoch, memory)
        };
        fill(&mut snapshot);
        self.writer
            .append(&snapshot)
            .map_err(|e| Error::io(self.writer.path(), e))?;
        self.observer.snapshot(&snapshot);
        Ok(())
    }
}
