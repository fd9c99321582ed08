//! The memory side of a run: checks inside each step, the actions policies ask for, the
//! release and its verification at run end, the growth alarm, snapshots and the picture.

use burn::optim::ModuleOptimizer;

use super::fit::{device_error, Breach, Run};
use crate::config::ClearPolicy;
use crate::error::Error;
use crate::memory::{
    format_bytes, peak_resident_set_bytes, resident_set_bytes, LimitExceeded, MemoryAction,
    MemorySource, MemoryUsage, Phase, RunState,
};
use crate::model::Model;
use crate::report::{check_growth, read_snapshots, render_memory_svg, Event, Retained, Snapshot};

impl Run<'_> {
    /// After the run's tensors are gone: apply the `clear` policy, then measure what stayed.
    pub(super) fn finish(&mut self) -> Result<(), Error> {
        let epoch = self.summary.epochs;
        let state = self.state(epoch, self.summary.steps, 0);
        let usage = self.read_memory()?;
        for action in self.policies.decide(Phase::RunEnd, &usage, &state) {
            self.act(action, &state)?;
        }
        let mut after = self.read_memory()?;
        let retained = Retained {
            retained_bytes_in_use: after.bytes_in_use as i64 - self.baseline.bytes_in_use as i64,
            retained_bytes_reserved: after.bytes_reserved as i64
                - self.baseline.bytes_reserved as i64,
            rss_before_bytes: self.rss_before,
            rss_peak_bytes: peak_resident_set_bytes().unwrap_or(0),
            rss_after_bytes: resident_set_bytes().unwrap_or(0),
        };
        let peak = self.summary.peak_bytes_in_use.max(after.peak_bytes_in_use);
        let tolerance = peak / 100;
        if retained.retained_bytes_in_use > tolerance as i64 {
            self.observer.message(&format!(
                "warning: the run kept {} in use after releasing everything ({:.1}% of its {} peak)",
                format_bytes(retained.retained_bytes_in_use as u64),
                100.0 * retained.retained_bytes_in_use as f64 / peak.max(1) as f64,
                format_bytes(peak)
            ));
        }
        if self.config.memory.clear != ClearPolicy::Never
            && self.summary.memory_source == MemorySource::CubeclPool
            && retained.retained_bytes_reserved > tolerance as i64
        {
            self.observer.message(&format!(
                "warning: the device pools still reserve {} more than before the run (a page \
                 stays reserved while anything still lives in it; see docs/cubecl-memory.md)",
                format_bytes(retained.retained_bytes_reserved as u64)
            ));
        }
        after.peak_bytes_in_use = peak;
        self.summary.retained = Some(retained);
        self.snapshot(Event::RunEnd, epoch, after, |s| s.retained = Some(retained))
    }

    /// Raises (once) and updates the growth alarm from the epoch-end in-use figures.
    pub(super) fn watch_growth(&mut self, in_use: u64) {
        self.epoch_in_use.push(in_use);
        let Some(mut alarm) = check_growth(&self.epoch_in_use) else {
            return;
        };
        if let Some(raised) = self.summary.growth_alarm {
            // Keep the epoch it was first raised at; refresh the slope.
            alarm.epoch = raised.epoch;
        } else {
            self.observer.message(&format!(
                "warning: memory in use grew every epoch: about {} per epoch after epoch {} \
                 (something keeps tensors or outputs alive across epochs)",
                format_bytes(alarm.slope_bytes_per_epoch.max(0.0) as u64),
                alarm.epoch
            ));
        }
        self.summary.growth_alarm = Some(alarm);
    }

    /// Draws `memory.svg` from the snapshots on disk. A picture that cannot be drawn is
    /// reported, not fatal: the snapshots it comes from are intact, and `tidemark report`
    /// can draw it again.
    pub(super) fn draw_memory(&mut self) {
        let dir = &self.summary.run_dir;
        let drawn = read_snapshots(&dir.join("snapshots.jsonl"))
            .map_err(|e| e.to_string())
            .and_then(|snapshots| {
                render_memory_svg(
                    &snapshots,
                    self.summary.limit_bytes,
                    &self.summary.name,
                    &dir.join("memory.svg"),
                )
            });
        if let Err(e) = drawn {
            self.observer
                .message(&format!("warning: memory.svg not drawn: {e}"));
        }
    }

    /// Looks at memory inside a step; a breach of the limit stops the step.
    pub(super) fn check_step(&mut self, state: &RunState) -> Result<(), Breach> {
        let usage = self.probe.observe();
        for action in self.policies.decide(Phase::Step, &usage, state) {
            match action {
                MemoryAction::ShrinkBatch { .. } => {
                    return Err(Breach::Shrink {
                        observed: crate::memory::policy::held(&usage).0,
                    })
                }
                MemoryAction::Fail(e) => return Err(Breach::Fail(e)),
                // No policy reserves or cleans mid-step.
                MemoryAction::Reserve { .. } | MemoryAction::Cleanup => {}
            }
        }
        Ok(())
    }

    /// Writes the checkpoint of `epoch` (0: before training), then checks what writing it
    /// held against the limit. A failure leaves the checkpoint complete on disk.
    pub(super) fn checkpoint(
        &mut self,
        epoch: usize,
        model: &Model,
        optimizer: &ModuleOptimizer,
    ) -> Result<(), Error> {
        self.probe.begin_window();
        let saved = self
            .checkpointer
            .save(epoch, self.summary.steps, model, optimizer)?;
        self.summary.checkpoint = Some(saved);
        let usage = self.probe.observe();
        self.summary.peak_bytes_in_use =
            self.summary.peak_bytes_in_use.max(usage.peak_bytes_in_use);
        let state = self.state(epoch, self.summary.steps, 0);
        for action in self.policies.decide(Phase::Checkpoint, &usage, &state) {
            self.act(action, &state)?;
        }
        Ok(())
    }

    /// Halves the micro-batch (doubling accumulation) and records it.
    pub(super) fn shrink(&mut self, state: &RunState, observed: u64) -> Result<(), Error> {
        self.previous_attempt = Some(crate::memory::Attempt {
            accumulation_steps: state.accumulation_steps,
            observed,
        });
        self.factor *= 2;
        let detail = format!(
            "{} over the memory limit at step {} of epoch {}: micro-batch {} -> {}, \
             accumulation_steps {} -> {} (effective batch unchanged); retrying the step",
            format_bytes(observed),
            state.step,
            state.epoch,
            state.micro_batch,
            self.micro_batch(),
            state.accumulation_steps,
            self.config.train.accumulation_steps * self.factor
        );
        self.summary.micro_batch = self.micro_batch();
        self.summary.accumulation_steps = self.config.train.accumulation_steps * self.factor;
        self.memory_event(state.epoch, "shrink", detail)
    }

    /// Records the breach and turns it into the run's error.
    pub(super) fn fail(&mut self, e: LimitExceeded) -> Error {
        if let Err(write_error) = self.memory_event(e.epoch, "limit", e.to_string()) {
            return write_error;
        }
        Error::Limit(e)
    }

    /// Applies a decision taken outside a step.
    pub(super) fn act(&mut self, action: MemoryAction, state: &RunState) -> Result<(), Error> {
        match action {
            MemoryAction::Fail(e) => Err(self.fail(e)),
            MemoryAction::ShrinkBatch { .. } => Ok(()),
            action => {
                if let Some(applied) = self.executor.apply(&action).map_err(device_error)? {
                    self.memory_event(state.epoch, applied.action, applied.detail)?;
                }
                Ok(())
            }
        }
    }

    pub(super) fn memory_event(
        &mut self,
        epoch: usize,
        action: &str,
        detail: String,
    ) -> Result<(), Error> {
        self.summary.memory_actions += 1;
        let usage = self.probe.observe();
        self.snapshot(Event::MemoryAction, epoch, usage, |s| {
            s.action = Some(action.to_string());
            s.detail = Some(detail);
        })
    }

    pub(super) fn read_memory(&mut self) -> Result<MemoryUsage, Error> {
        self.probe.read().map_err(device_error)
    }

    pub(super) fn snapshot(
        &mut self,
        event: Event,
        epoch: usize,
        memory: MemoryUsage,
        fill: impl FnOnce(&mut Snapshot),
    ) -> Result<(), Error> {
        if event != Event::MemoryAction {
            self.summary.peak_bytes_in_use =
                self.summary.peak_bytes_in_use.max(memory.peak_bytes_in_use);
            self.summary.peak_bytes_reserved =
                self.summary.peak_bytes_reserved.max(memory.bytes_reserved);
        }
        let mut snapshot = Snapshot {
            event,
            epoch,
            step: self.summary.steps,
            loss: None,
            val_loss: None,
            val_accuracy: None,
            samples_per_sec: None,
            memory,
            rss_bytes: resident_set_bytes(),
            loss_scale: None,
            skipped_steps: None,
            micro_batch: self.micro_batch(),
            accumulation_steps: self.config.train.accumulation_steps * self.factor,
            action: None,
            detail: None,
            retained: None,
            elapsed_s: self.started.elapsed().as_secs_f64(),
        };
        fill(&mut snapshot);
        self.writer
            .append(&snapshot)
            .map_err(|e| Error::io(self.writer.path(), e))?;
        self.observer.snapshot(&snapshot);
        Ok(())
    }
}
