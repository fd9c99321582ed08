//! The memory governor: the memory layer's [`Control`] (probe, policies, executor) driven over
//! one run's phases, with what belongs to the run rather than the device: the batch layout a
//! limit may shrink (`layout`), a step under the limit and its retry (`retry`, `limit`), the
//! records it writes (`record`: `snapshots.jsonl` and each epoch's step trace) and the run's
//! memory statistics (`stats`). The [`Trainer`](crate::Trainer) drives one; a hand-written
//! loop can drive its own, at run start, after each step, at each epoch's end and at run end
//! (see `examples/custom_loop.rs`). Drawing is [`crate::report`]'s.

use std::path::Path;

use burn::tensor::Device;

mod layout;
mod limit;
mod measure;
mod prepare;
mod record;
mod retry;
mod stats;

pub use layout::{Breach, EpochFigures, Layout};
pub use prepare::Prepared;
pub use retry::StepCheck;
pub use stats::MemoryStats;

use crate::config::{ClearPolicy, MemoryConfig};
use crate::error::Error;
use crate::memory::{
    Attempt, Breakdown, Control, Footprint, MemoryAction, MemorySource, MemoryUsage, Phase,
    RunState, StepPeaks,
};
use crate::record::{Event, Observer, Retained, SnapshotWriter, StepTrace, Warning};

/// Governs one run's memory.
pub struct Governor {
    /// The memory layer: the probe, policies and executor, and the baseline.
    control: Control,
    /// When the run started, for the snapshots' `elapsed_s`.
    started: std::time::Instant,
    writer: SnapshotWriter,
    observer: Box<dyn Observer>,
    layout: Layout,
    previous_attempt: Option<Attempt>,
    step: usize,
    resting_estimate: u64,
    stats: MemoryStats,
    /// What the run's tensors hold by kind, for a breach's breakdown.
    footprint: Option<Footprint>,
    /// The epoch's highest step figures by phase: where its peak fell.
    step_peaks: StepPeaks,
    /// The highest figure of the step under way, for its point of the step trace.
    step_peak: u64,
    /// Whether the step under way is in its update (after `before_update`): a breach there is
    /// the update's.
    in_update: bool,
    /// The epoch's memory per step.
    trace: StepTrace,
}

impl Governor {
    /// Checks `config` against `device`, warms the backend up and takes the baseline that
    /// clearing is verified against. Errors here leave nothing on disk.
    pub fn prepare(config: &MemoryConfig, device: &Device) -> Result<Prepared, Error> {
        Prepared::new(config, device)
    }

    /// A governor for a hand-written loop: [`prepare`](Self::prepare), then snapshots in
    /// `<run_dir>/snapshots.jsonl` (the directory must exist).
    pub fn new(
        config: &MemoryConfig,
        device: &Device,
        run_dir: &Path,
        layout: Layout,
        observer: impl Observer + 'static,
    ) -> Result<Self, Error> {
        Self::prepare(config, device)?.open(run_dir, layout, Box::new(observer))
    }

    /// The memory layer: where figures come from, the limit, the baseline.
    pub fn control(&self) -> &Control {
        &self.control
    }

    /// The `snapshots.jsonl` this governor writes.
    pub fn snapshots_path(&self) -> &Path {
        self.writer.path()
    }

    /// The batch layout now.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// What the governor has counted over the run: peaks, memory actions, growth, what
    /// stayed after release.
    pub fn stats(&self) -> &MemoryStats {
        &self.stats
    }

    /// Records the number of optimizer steps taken so far (snapshots carry it).
    pub fn set_step(&mut self, step: usize) {
        self.step = step;
    }

    /// Reads the memory figures now, after waiting for the device.
    fn read(&mut self) -> Result<MemoryUsage, Error> {
        self.control.probe().read().map_err(Error::device)
    }

    fn state(&self, epoch: usize, step: usize) -> RunState {
        RunState {
            epoch,
            step,
            micro_batch: self.layout.micro_batch(),
            accumulation_steps: self.layout.micro_steps(),
            resting_estimate: self.resting_estimate,
            previous_attempt: self.previous_attempt,
        }
    }

    /// Before the first step, with the model built: reserves (preallocation), checks that what
    /// is held now plus `to_come` bytes (gradients and optimizer state, which the first step
    /// allocates; see [`resting_bytes`](crate::train::resting_bytes)) fit the limit, and writes
    /// the `run_start` snapshot.
    pub fn run_start(&mut self, to_come: u64) -> Result<(), Error> {
        self.start(Event::RunStart, 0, to_come, None)
    }

    /// [`run_start`](Self::run_start) for a run that continues after `epoch` epochs: the
    /// snapshot is a `resume` event, with `detail` saying from where.
    pub fn resume_start(
        &mut self,
        epoch: usize,
        to_come: u64,
        detail: String,
    ) -> Result<(), Error> {
        self.start(Event::Resume, epoch, to_come, Some(detail))
    }

    fn start(
        &mut self,
        event: Event,
        epoch: usize,
        to_come: u64,
        detail: Option<String>,
    ) -> Result<(), Error> {
        let usage = self.read()?;
        self.resting_estimate = usage.bytes_in_use + to_come;
        let state = self.state(epoch, self.step);
        self.apply(Phase::RunStart, &usage, &state)?;
        let usage = self.read()?;
        self.snapshot(event, epoch, usage, |s| s.detail = detail)
    }

    /// Starts an epoch: the epoch's peak restarts at the current figure.
    pub fn begin_epoch(&mut self) {
        self.control.probe().reset_peak();
        self.step_peaks = StepPeaks::default();
    }

    /// Opens a new limit window (a step, validation, a checkpoint) at the current figure.
    fn begin_window(&mut self) {
        self.control.probe().begin_window();
    }

    /// Starts a step: a new window, and no breached attempt behind it.
    pub fn begin_step(&mut self) {
        self.previous_attempt = None;
        self.step_peak = 0;
        self.in_update = false;
        self.control.probe().begin_window();
    }

    /// Writes epoch `epoch`'s snapshot with `figures`, and watches for growth.
    pub fn epoch_snapshot(&mut self, epoch: usize, figures: EpochFigures) -> Result<(), Error> {
        let usage = self.read()?;
        let step_peaks = self.step_peaks;
        let steps = Some(self.trace.take()).filter(|t| !t.is_empty());
        self.stats.run_peaks.training = self.stats.run_peaks.training.max(usage.peak_bytes_in_use);
        self.snapshot(Event::Epoch, epoch, usage, |s| {
            s.loss = figures.loss;
            s.val_loss = figures.val_loss;
            s.samples_per_sec = figures.samples_per_sec;
            s.lr = figures.lr;
            s.clipped_steps = figures.clipped_steps;
            s.steps = steps;
            s.breakdown = figures.footprint.map(|f| {
                let peak = usage.peak_bytes_in_use;
                Breakdown::of(&f, usage.bytes_in_use, peak, step_peaks.phase_of(peak))
            });
            if let Some((scale, skipped)) = figures.loss_scale {
                s.loss_scale = Some(scale);
                s.skipped_steps = Some(skipped);
            }
            s.metrics = figures
                .metrics
                .into_iter()
                .map(|(k, v)| (k, Some(v)))
                .collect();
        })?;
        if let Some(raised) = self.stats.growth.push(usage.bytes_in_use) {
            self.observer.warning(&Warning::Growth(raised));
        }
        Ok(())
    }

    /// Runs `write` (a checkpoint of `epoch`) in its own window and checks what it held
    /// against the limit. A failure leaves what `write` wrote on disk.
    pub fn checkpoint<T>(
        &mut self,
        epoch: usize,
        write: impl FnOnce() -> Result<T, Error>,
    ) -> Result<T, Error> {
        self.control.probe().begin_window();
        let written = write()?;
        let usage = self.control.probe().observe();
        self.stats.peak_bytes_in_use = self.stats.peak_bytes_in_use.max(usage.peak_bytes_in_use);
        let state = self.state(epoch, self.step);
        self.apply(Phase::Checkpoint, &usage, &state)?;
        Ok(written)
    }

    /// The end of epoch `epoch`: checks `window` (validation's figures, or the epoch's) against
    /// the limit and applies `clear = "every_epoch"`.
    pub fn close_epoch(&mut self, epoch: usize, window: &MemoryUsage) -> Result<(), Error> {
        let state = self.state(epoch, self.step);
        self.apply(Phase::EpochEnd, window, &state)
    }

    /// [`epoch_snapshot`](Self::epoch_snapshot) then [`close_epoch`](Self::close_epoch) over the
    /// epoch's own figures: the epoch end of a hand-written loop.
    pub fn epoch_end(&mut self, epoch: usize, figures: EpochFigures) -> Result<(), Error> {
        self.epoch_snapshot(epoch, figures)?;
        let window = self.control.probe().observe();
        self.close_epoch(epoch, &window)
    }

    /// After the run's tensors are gone: applies the `clear` policy, measures what stayed
    /// against the baseline, warns if it is more than 1% of the peak, and writes `run_end`.
    pub fn run_end(&mut self, epoch: usize) -> Result<Retained, Error> {
        self.control.settle()?;
        let state = self.state(epoch, self.step);
        let usage = self.read()?;
        self.apply(Phase::RunEnd, &usage, &state)?;
        let mut after = self.read()?;
        let retained = Retained::since(&self.control.baseline(), &after, self.control.rss_before());
        let peak = self.stats.peak_bytes_in_use.max(after.peak_bytes_in_use);
        let tolerance = (peak / 100) as i64;
        if retained.retained_bytes_in_use > tolerance {
            self.observer.warning(&Warning::Retained {
                bytes: retained.retained_bytes_in_use as u64,
                peak,
            });
        }
        if self.control.clear() != ClearPolicy::Never
            && self.control.probe().source() == MemorySource::CubeclPool
            && retained.retained_bytes_reserved > tolerance
        {
            self.observer.warning(&Warning::PoolsReserved {
                bytes: retained.retained_bytes_reserved as u64,
            });
        }
        after.peak_bytes_in_use = peak;
        self.stats.retained = Some(retained);
        self.snapshot(Event::RunEnd, epoch, after, |s| s.retained = Some(retained))?;
        Ok(retained)
    }

    /// Applies the policies' decisions at `phase` outside a step.
    fn apply(&mut self, phase: Phase, usage: &MemoryUsage, state: &RunState) -> Result<(), Error> {
        for action in self.control.decide(phase, usage, state) {
            match action {
                MemoryAction::Fail(e) => return Err(self.fail(e)),
                MemoryAction::ShrinkBatch { .. } => {}
                action => {
                    if let Some(applied) = self.control.execute(&action)? {
                        self.memory_event(state.epoch, applied.action, applied.detail)?;
                    }
                }
            }
        }
        Ok(())
    }
}
