//! The memory governor: one run's probe, policies and executor, the batch layout a limit may
//! shrink, and the `snapshots.jsonl` it writes. The [`Trainer`](crate::Trainer) drives one;
//! a hand-written loop can drive its own, at run start, after each step, at each epoch's end
//! and at run end (see `examples/custom_loop.rs`).

use std::path::Path;

use burn::tensor::Device;

mod layout;
mod limit;
mod prepare;
mod record;
mod retry;

pub use layout::{Breach, EpochFigures, Layout};
pub use prepare::Prepared;
pub use retry::StepCheck;

use super::advice::Peaks;
use super::breakdown::{Breakdown, Footprint, StepPeaks};
use super::growth::{GrowthAlarm, GrowthWatch};
use super::observer::{Observer, Warning};
use super::policy::{Attempt, MemoryAction, Phase, RunState};
use super::snapshots::{Event, Retained, SnapshotWriter};
use super::trace::StepTrace;
use super::usage::{MemorySource, MemoryUsage};
use crate::config::{ClearPolicy, MemoryConfig};
use crate::error::Error;

/// Governs one run's memory.
pub struct Governor {
    /// The probe, policies and executor, and the baseline they were prepared with.
    setup: Prepared,
    writer: SnapshotWriter,
    observer: Box<dyn Observer>,
    layout: Layout,
    previous_attempt: Option<Attempt>,
    step: usize,
    resting_estimate: u64,
    growth: GrowthWatch,
    peak_bytes_in_use: u64,
    peak_bytes_reserved: u64,
    memory_actions: usize,
    retained: Option<Retained>,
    /// What the run's tensors hold by kind, for a breach's breakdown.
    footprint: Option<Footprint>,
    /// The epoch's highest step figures by phase: where its peak fell.
    step_peaks: StepPeaks,
    /// The run's highest step figures by phase, and its highest epoch peak: for the advisor.
    run_peaks: Peaks,
    /// The highest figure of the step under way, for its point of the step trace.
    step_peak: u64,
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

    /// Where memory figures come from.
    pub fn source(&self) -> MemorySource {
        self.setup.probe.source()
    }

    /// The `snapshots.jsonl` this governor writes.
    pub fn snapshots_path(&self) -> &Path {
        self.writer.path()
    }

    /// The batch layout now.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The observer, for progress the loop reports itself.
    pub fn observer(&mut self) -> &mut dyn Observer {
        self.observer.as_mut()
    }

    /// The limit in bytes, if one is set.
    pub fn limit_bytes(&self) -> Option<u64> {
        self.setup.limit_bytes
    }

    /// Bytes reserved before the run.
    pub fn baseline(&self) -> MemoryUsage {
        self.setup.baseline
    }

    /// Bytes the backend's warm-up kept (one-time state; about 0 after a process's first run).
    pub fn device_init_bytes(&self) -> i64 {
        self.setup.device_init_bytes
    }

    /// Highest in-use peak and reserved figure recorded so far.
    pub fn peaks(&self) -> (u64, u64) {
        (self.peak_bytes_in_use, self.peak_bytes_reserved)
    }

    /// `memory_action` events written.
    pub fn memory_actions(&self) -> usize {
        self.memory_actions
    }

    /// The growth alarm, once raised.
    pub fn growth_alarm(&self) -> Option<GrowthAlarm> {
        self.growth.alarm()
    }

    /// What the run kept, after [`run_end`](Self::run_end).
    pub fn retained(&self) -> Option<Retained> {
        self.retained
    }

    /// Records the number of optimizer steps taken so far (snapshots carry it).
    pub fn set_step(&mut self, step: usize) {
        self.step = step;
    }

    /// Reads the memory figures now, after waiting for the device.
    pub fn read(&mut self) -> Result<MemoryUsage, Error> {
        self.setup.probe.read().map_err(Error::device)
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
        self.setup.probe.reset_peak();
        self.step_peaks = StepPeaks::default();
    }

    /// Opens a new limit window (a step, validation, a checkpoint) at the current figure.
    pub fn begin_window(&mut self) {
        self.setup.probe.begin_window();
    }

    /// Starts a step: a new window, and no breached attempt behind it.
    pub fn begin_step(&mut self) {
        self.previous_attempt = None;
        self.step_peak = 0;
        self.setup.probe.begin_window();
    }

    /// The figures of the window opened by [`begin_window`](Self::begin_window), e.g. around
    /// validation.
    pub fn window(&mut self) -> MemoryUsage {
        self.setup.probe.observe()
    }

    /// Writes epoch `epoch`'s snapshot with `figures`, and watches for growth.
    pub fn epoch_snapshot(&mut self, epoch: usize, figures: EpochFigures) -> Result<(), Error> {
        let usage = self.read()?;
        let step_peaks = self.step_peaks;
        let steps = Some(self.trace.take()).filter(|t| !t.is_empty());
        self.run_peaks.training = self.run_peaks.training.max(usage.peak_bytes_in_use);
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
        if let Some(raised) = self.growth.push(usage.bytes_in_use) {
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
        self.setup.probe.begin_window();
        let written = write()?;
        let usage = self.setup.probe.observe();
        self.peak_bytes_in_use = self.peak_bytes_in_use.max(usage.peak_bytes_in_use);
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
        let window = self.setup.probe.observe();
        self.close_epoch(epoch, &window)
    }

    /// After the run's tensors are gone: applies the `clear` policy, measures what stayed
    /// against the baseline, warns if it is more than 1% of the peak, and writes `run_end`.
    pub fn run_end(&mut self, epoch: usize) -> Result<Retained, Error> {
        self.setup.executor.settle().map_err(Error::device)?;
        let state = self.state(epoch, self.step);
        let usage = self.read()?;
        self.apply(Phase::RunEnd, &usage, &state)?;
        let mut after = self.read()?;
        let retained = Retained::since(&self.setup.baseline, &after, self.setup.rss_before);
        let peak = self.peak_bytes_in_use.max(after.peak_bytes_in_use);
        let tolerance = (peak / 100) as i64;
        if retained.retained_bytes_in_use > tolerance {
            self.observer.warning(&Warning::Retained {
                bytes: retained.retained_bytes_in_use as u64,
                peak,
            });
        }
        if self.setup.clear != ClearPolicy::Never
            && self.setup.probe.source() == MemorySource::CubeclPool
            && retained.retained_bytes_reserved > tolerance
        {
            self.observer.warning(&Warning::PoolsReserved {
                bytes: retained.retained_bytes_reserved as u64,
            });
        }
        after.peak_bytes_in_use = peak;
        self.retained = Some(retained);
        self.snapshot(Event::RunEnd, epoch, after, |s| s.retained = Some(retained))?;
        Ok(retained)
    }

    /// Draws `memory.svg` beside `snapshots.jsonl`, from the snapshots on disk, titled `title`,
    /// with `monitor` (the monitored validation metric; `val_loss` when `None`) under memory.
    /// A picture that cannot be drawn is a warning, not an error: the snapshots it comes from
    /// are intact, and `tidemark report RUN_DIR` can draw it again.
    pub fn draw(&mut self, title: &str, monitor: Option<&str>) {
        let of = crate::report::PictureOf {
            title,
            limit: self.setup.limit_bytes,
            monitor,
        };
        if let Err(e) = crate::report::draw_memory_svg(self.writer.path(), of) {
            self.observer.warning(&Warning::PictureNotDrawn(e));
        }
    }

    /// Applies the policies' decisions at `phase` outside a step.
    fn apply(&mut self, phase: Phase, usage: &MemoryUsage, state: &RunState) -> Result<(), Error> {
        for action in self.setup.policies.decide(phase, usage, state) {
            match action {
                MemoryAction::Fail(e) => return Err(self.fail(e)),
                MemoryAction::ShrinkBatch { .. } => {}
                action => {
                    if let Some(applied) =
                        self.setup.executor.apply(&action).map_err(Error::device)?
                    {
                        self.memory_event(state.epoch, applied.action, applied.detail)?;
                    }
                }
            }
        }
        Ok(())
    }
}
