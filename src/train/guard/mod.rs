//! The memory guard: the memory layer's [`Control`] (probe, policies, executor) enforced over
//! one run's phases. Three parts, as burn-train keeps its policies apart from its executor:
//! what measures ([`Readings`](measure::Readings), `measure`: bytes in use, windows, the
//! epoch's peak), what the guard decides with (`standing`: the batch layout a limit may shrink
//! or move to host memory, the estimate at rest, the breached attempt, the footprint, and what
//! follows from them alone, each a pure function), and the guard itself, which reads, asks the
//! policies, acts on the device and records, phase by phase: a step under the limit and its
//! retry (`retry`, `limit`), `fit`'s layout, the auto-offload (`offload`). The run's
//! [`RunRecorder`], beside it, records: each phase takes the recorder, so a phase cannot act
//! without recording what it saw and did, and the guard knows nothing of what the recorder
//! writes (`snapshots.jsonl`, TensorBoard's events, the observer).
//!
//! The [`Trainer`](crate::Trainer) and [`HandLoop`](crate::HandLoop) drive one; a loop of
//! one's own can too: [`prepare`](MemoryGuard::prepare), then the recorder
//! ([`RunRecorder::open`], from [`Prepared::started`]) and the guard
//! ([`open`](Prepared::open)); then `run_start`, [`run_step`](MemoryGuard::run_step) with
//! `before_update` and `after_step` around the update, `epoch_end`, `checkpoint` and
//! `run_end`, each given the recorder. Drawing is [`crate::report`]'s.

use burn::tensor::Device;

mod breach;
mod limit;
mod measure;
mod offload;
mod prepare;
mod retry;
mod standing;

pub use breach::Breach;
pub use prepare::Prepared;
pub use retry::StepCheck;
use standing::Standing;

use super::recorder::{EpochFigures, RunRecorder};
use crate::config::{ClearPolicy, MemoryConfig};
use crate::error::Error;
use crate::memory::Layout;
use crate::memory::{Control, MemoryAction, MemorySource, MemoryUsage, Phase, RunState};
use crate::record::{Event, Retained};

/// Enforces one run's memory policies.
pub struct MemoryGuard {
    /// The memory layer: the probe, policies and executor, and the baseline.
    control: Control,
    /// Where the run stands against its limit: what the guard decides with.
    standing: Standing,
}

impl MemoryGuard {
    /// Checks `config` against `device`, warms the backend up and takes the baseline that
    /// clearing is verified against. Errors here leave nothing on disk.
    pub fn prepare(config: &MemoryConfig, device: &Device) -> Result<Prepared, Error> {
        Prepared::new(config, device)
    }

    /// The memory layer: where figures come from, the limit, the baseline.
    pub fn control(&self) -> &Control {
        &self.control
    }

    /// The batch layout now.
    pub fn layout(&self) -> Layout {
        self.standing.layout()
    }

    /// Where the figures come from.
    pub fn source(&self) -> MemorySource {
        self.control.source()
    }

    /// The limit in bytes, if one is set.
    pub fn limit_bytes(&self) -> Option<u64> {
        self.control.limit_bytes()
    }

    /// Reads the memory figures now, after waiting for the device.
    fn read(&mut self) -> Result<MemoryUsage, Error> {
        self.control.meter().read().map_err(Error::device)
    }

    /// Before the first step, with the model built: reserves (preallocation), checks that what
    /// is held now plus `to_come` bytes (gradients and optimizer state, which the first step
    /// allocates; see [`resting_bytes`](crate::train::resting_bytes)) fit the limit, and writes
    /// the `run_start` snapshot.
    pub fn run_start(&mut self, rec: &mut RunRecorder, to_come: u64) -> Result<(), Error> {
        self.start(rec, Event::RunStart, 0, to_come, None)
    }

    /// [`run_start`](Self::run_start) for a run that continues after `epoch` epochs and `step`
    /// optimizer steps: the snapshot is a `resume` event, with `detail` saying from where.
    pub(crate) fn resume_start(
        &mut self,
        rec: &mut RunRecorder,
        (epoch, step): (usize, usize),
        to_come: u64,
        detail: String,
    ) -> Result<(), Error> {
        rec.set_step(step);
        self.start(rec, Event::Resume, epoch, to_come, Some(detail))
    }

    fn start(
        &mut self,
        rec: &mut RunRecorder,
        event: Event,
        epoch: usize,
        to_come: u64,
        detail: Option<String>,
    ) -> Result<(), Error> {
        let usage = self.read()?;
        self.standing.at_rest(usage.bytes_in_use, to_come);
        let state = self.standing.state(epoch, rec.steps());
        self.apply(rec, Phase::RunStart, &usage, &state)?;
        let usage = self.read()?;
        rec.snapshot(event, epoch, usage, self.layout(), |s| s.detail = detail)
    }

    /// Starts an epoch: the epoch's peak restarts at the current figure.
    pub fn begin_epoch(&mut self, rec: &mut RunRecorder) {
        self.control.meter().reset_peak();
        rec.begin_epoch();
    }

    /// Starts a step: a new window, and no breached attempt behind it.
    fn begin_step(&mut self, rec: &mut RunRecorder) {
        self.standing.begin_step();
        self.control.meter().begin_window();
        rec.begin_step();
    }

    /// Writes epoch `epoch`'s snapshot with `figures` and the epoch's memory, and watches for
    /// growth.
    pub(crate) fn epoch_snapshot(
        &mut self,
        rec: &mut RunRecorder,
        epoch: usize,
        figures: EpochFigures,
    ) -> Result<(), Error> {
        let usage = self.read()?;
        rec.epoch_snapshot(epoch, figures, usage, self.layout())
    }

    /// Runs `write` (a checkpoint of `epoch`) in its own window and checks what it held
    /// against the limit. A failure leaves what `write` wrote on disk.
    pub fn checkpoint<T>(
        &mut self,
        rec: &mut RunRecorder,
        epoch: usize,
        write: impl FnOnce() -> Result<T, Error>,
    ) -> Result<T, Error> {
        self.control.meter().begin_window();
        let written = write()?;
        let usage = self.control.meter().observe();
        rec.outside_peak(usage.peak_bytes_in_use);
        let state = self.standing.state(epoch, rec.steps());
        self.apply(rec, Phase::Checkpoint, &usage, &state)?;
        Ok(written)
    }

    /// The end of epoch `epoch`: checks `window` (validation's figures, or the epoch's) against
    /// the limit and applies `clear = "every_epoch"`.
    pub(crate) fn close_epoch(
        &mut self,
        rec: &mut RunRecorder,
        epoch: usize,
        window: &MemoryUsage,
    ) -> Result<(), Error> {
        let state = self.standing.state(epoch, rec.steps());
        self.apply(rec, Phase::EpochEnd, window, &state)
    }

    /// The epoch's snapshot, then the end-of-epoch check over the epoch's own figures: the
    /// epoch end of a hand-written loop.
    pub fn epoch_end(
        &mut self,
        rec: &mut RunRecorder,
        epoch: usize,
        figures: EpochFigures,
    ) -> Result<(), Error> {
        self.epoch_snapshot(rec, epoch, figures)?;
        let window = self.control.meter().observe();
        self.close_epoch(rec, epoch, &window)
    }

    /// After the run's tensors are gone: applies the `clear` policy, measures what stayed
    /// against the baseline, warns if it is more than 1% of the peak, and writes `run_end`.
    pub fn run_end(&mut self, rec: &mut RunRecorder, epoch: usize) -> Result<Retained, Error> {
        self.control.settle()?;
        let state = self.standing.state(epoch, rec.steps());
        let usage = self.read()?;
        self.apply(rec, Phase::RunEnd, &usage, &state)?;
        let after = self.read()?;
        let retained = Retained::since(&self.control.baseline(), &after, self.control.rss_before());
        let pools = self.control.clear() != ClearPolicy::Never
            && self.control.meter().source() == MemorySource::CubeclPool;
        rec.run_end(epoch, after, retained, pools, self.layout())?;
        Ok(retained)
    }

    /// Applies the policies' decisions at `phase` outside a step.
    fn apply(
        &mut self,
        rec: &mut RunRecorder,
        phase: Phase,
        usage: &MemoryUsage,
        state: &RunState,
    ) -> Result<(), Error> {
        for action in self.control.decide(phase, usage, state) {
            match action {
                MemoryAction::Fail(e) => return Err(self.fail(rec, e)),
                MemoryAction::ShrinkBatch { .. } => {}
                action => {
                    if let Some(applied) = self.control.execute(&action)? {
                        self.record(rec, state.epoch, applied.action, applied.detail)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// What the guard records.
impl MemoryGuard {
    /// A memory action it took at `epoch`, with the figures now, as a snapshot line.
    fn record(
        &mut self,
        rec: &mut RunRecorder,
        epoch: usize,
        action: crate::memory::Action,
        detail: String,
    ) -> Result<(), Error> {
        let usage = self.control.meter().observe();
        rec.memory_event(epoch, action, detail, usage, self.layout())
    }
}
