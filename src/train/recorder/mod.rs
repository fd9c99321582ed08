//! The run recorder: what a run writes and shows of its memory, apart from what enforces the
//! limit ([`MemoryGuard`](crate::train::MemoryGuard)). It keeps `snapshots.jsonl`, each
//! epoch's step trace, the highest step figures by phase, the run's memory statistics
//! (`stats`), and the observer that shows progress. The guard records through it (each
//! step's figures, a shrink, a breach, the epoch's and the run's snapshots); a loop tells it
//! its progress directly. It knows nothing of the limit: figures come to it read.

use std::path::Path;
use std::time::Instant;

mod figures;
mod stats;

pub use figures::EpochFigures;
pub use stats::MemoryStats;

use crate::error::Error;
use crate::memory::Layout;
use crate::memory::{resident_set_bytes, Action, Breakdown, MemoryUsage, PeakPhase, StepPeaks};
use crate::record::tensorboard::EventFile;
use crate::record::{
    EpochProgress, Event, Observer, Retained, Snapshot, SnapshotWriter, StepSample, StepTrace,
    Warning,
};

/// Records one run: its snapshots, step trace and memory statistics, and its progress.
pub struct RunRecorder {
    /// When the run started, for the snapshots' `elapsed_s`.
    started: Instant,
    writer: SnapshotWriter,
    observer: Box<dyn Observer>,
    /// Optimizer steps taken so far (snapshots carry it).
    step: usize,
    stats: MemoryStats,
    /// The epoch's highest step figures by phase: where its peak fell.
    step_peaks: StepPeaks,
    /// The highest figure of the step under way, for its point of the step trace.
    step_peak: u64,
    /// The epoch's memory per step.
    trace: StepTrace,
    /// TensorBoard's event file, where the run writes one.
    tensorboard: Option<EventFile>,
}

impl RunRecorder {
    /// Opens `<run_dir>/snapshots.jsonl`, and a new TensorBoard event file there if
    /// `tensorboard` (`run.tensorboard`); snapshot times count from `started` (the guard's
    /// [`Prepared::started`](crate::train::Prepared::started)). Open it before the guard
    /// ([`Prepared::open`](crate::train::Prepared::open)), whose baseline then leaves the
    /// recorder's own memory out.
    pub fn open(
        run_dir: &Path,
        started: Instant,
        observer: Box<dyn Observer>,
        tensorboard: bool,
    ) -> Result<Self, Error> {
        let path = run_dir.join("snapshots.jsonl");
        let writer = SnapshotWriter::open(&path).map_err(|e| Error::io(&path, e))?;
        let tensorboard = match tensorboard {
            true => Some(EventFile::create(run_dir).map_err(|e| Error::io(run_dir, e))?),
            false => None,
        };
        Ok(Self {
            started,
            writer,
            observer,
            step: 0,
            stats: MemoryStats::default(),
            step_peaks: StepPeaks::default(),
            step_peak: 0,
            trace: StepTrace::default(),
            tensorboard,
        })
    }

    /// The `snapshots.jsonl` this recorder writes.
    pub fn snapshots_path(&self) -> &Path {
        self.writer.path()
    }

    /// What the recorder has counted over the run: peaks, memory actions, growth, what
    /// stayed after release.
    pub fn stats(&self) -> &MemoryStats {
        &self.stats
    }

    /// Optimizer steps taken so far.
    pub fn steps(&self) -> usize {
        self.step
    }

    /// Records the number of optimizer steps taken so far: the guard's, after each step and at
    /// a resumed run's start.
    pub(in crate::train) fn set_step(&mut self, step: usize) {
        self.step = step;
    }
}

/// What a loop reports.
impl RunRecorder {
    /// A line worth telling the user.
    pub fn tell(&mut self, text: &str) {
        self.observer.message(text);
    }

    /// Something that went wrong without stopping the run.
    pub fn warn(&mut self, warning: &Warning) {
        self.observer.warning(warning);
    }

    /// Progress inside an epoch, also a step's scalars for TensorBoard.
    pub fn progress(&mut self, progress: &EpochProgress) {
        let step = self.step;
        self.tensorboard(|events| events.step(step, progress));
        self.observer.step(progress);
    }

    /// Writes to the TensorBoard event file, if the run has one; one that cannot be written
    /// is warned of once and closed, and the run goes on.
    fn tensorboard(&mut self, write: impl FnOnce(&mut EventFile) -> std::io::Result<()>) {
        let Some(events) = self.tensorboard.as_mut() else {
            return;
        };
        if let Err(e) = write(events) {
            let path = events.path().to_path_buf();
            self.tensorboard = None;
            let cause = e.to_string();
            self.observer
                .warning(&Warning::TensorBoardNotWritten { path, cause });
        }
    }

    /// An optimizer step is done (`step`, 1-based within `epoch`).
    pub fn step_done(&mut self, epoch: usize, step: usize) {
        self.observer.step_done(epoch, step);
    }
}

/// What the guard records of the steps.
impl RunRecorder {
    /// An epoch starts: its step figures by phase start again.
    pub(super) fn begin_epoch(&mut self) {
        self.step_peaks = StepPeaks::default();
    }

    /// A step starts: its own peak starts again.
    pub(super) fn begin_step(&mut self) {
        self.step_peak = 0;
    }

    /// A step's figure `peak` in `phase`, for the epoch's, the run's and the step's peaks.
    pub(super) fn step_figure(&mut self, phase: PeakPhase, peak: u64) {
        // Before the first update (step 0 done) the optimizer has no state yet.
        let (epoch, run) = match phase {
            PeakPhase::Update => (
                &mut self.step_peaks.update,
                &mut self.stats.run_peaks.steps.update,
            ),
            _ if self.step == 0 => (
                &mut self.step_peaks.backward,
                &mut self.stats.run_peaks.first_step,
            ),
            _ => (
                &mut self.step_peaks.backward,
                &mut self.stats.run_peaks.steps.backward,
            ),
        };
        *epoch = (*epoch).max(peak);
        *run = (*run).max(peak);
        self.step_peak = self.step_peak.max(peak);
    }

    /// Step `step` is done, holding `in_use`: its point of the epoch's step trace.
    pub(super) fn step_point(&mut self, step: usize, in_use: u64) {
        self.trace.push(StepSample {
            step,
            peak: self.step_peak,
            in_use,
        });
    }

    /// A figure read outside the snapshots (a checkpoint's window) that counts for the run's
    /// peak.
    pub(super) fn outside_peak(&mut self, peak: u64) {
        self.stats.peak_bytes_in_use = self.stats.peak_bytes_in_use.max(peak);
    }
}

/// What the guard records at the run's phases.
impl RunRecorder {
    /// A memory action taken at `epoch` (`detail` says what and why), with the figures now.
    pub(super) fn memory_event(
        &mut self,
        epoch: usize,
        action: Action,
        detail: String,
        usage: MemoryUsage,
        layout: Layout,
    ) -> Result<(), Error> {
        self.stats.memory_actions += 1;
        self.snapshot(Event::MemoryAction, epoch, usage, layout, |s| {
            s.action = Some(action);
            s.detail = Some(detail);
        })
    }

    /// Epoch `epoch`'s snapshot with `figures` and the epoch's `usage`, and the growth watch.
    pub(super) fn epoch_snapshot(
        &mut self,
        epoch: usize,
        figures: EpochFigures,
        usage: MemoryUsage,
        layout: Layout,
    ) -> Result<(), Error> {
        let step_peaks = self.step_peaks;
        let steps = Some(self.trace.take()).filter(|t| !t.is_empty());
        self.stats.run_peaks.training = self.stats.run_peaks.training.max(usage.peak_bytes_in_use);
        let peak = usage.peak_bytes_in_use;
        let breakdown = (figures.footprint)
            .map(|f| Breakdown::of(&f, usage.bytes_in_use, peak, step_peaks.phase_of(peak)));
        self.snapshot(Event::Epoch, epoch, usage, layout, |s| {
            figures.fill(s);
            s.steps = steps;
            s.breakdown = breakdown;
        })?;
        if let Some(raised) = self.stats.growth.push(usage.bytes_in_use) {
            self.observer.warning(&Warning::Growth(raised));
        }
        Ok(())
    }

    /// The run's end, after the release: what stayed (`retained`, warned of past 1% of the
    /// run's peak; `pools` where the pools' reserved bytes should have gone back too), and the
    /// `run_end` snapshot.
    pub(super) fn run_end(
        &mut self,
        epoch: usize,
        mut after: MemoryUsage,
        retained: Retained,
        pools: bool,
        layout: Layout,
    ) -> Result<(), Error> {
        let peak = self.stats.peak_bytes_in_use.max(after.peak_bytes_in_use);
        let tolerance = (peak / 100) as i64;
        if retained.retained_bytes_in_use > tolerance {
            self.observer.warning(&Warning::Retained {
                bytes: retained.retained_bytes_in_use as u64,
                peak,
            });
        }
        if pools && retained.retained_bytes_reserved > tolerance {
            self.observer.warning(&Warning::PoolsReserved {
                bytes: retained.retained_bytes_reserved as u64,
            });
        }
        after.peak_bytes_in_use = peak;
        self.stats.retained = Some(retained);
        self.snapshot(Event::RunEnd, epoch, after, layout, |s| {
            s.retained = Some(retained)
        })
    }

    /// Writes a snapshot line of `event` with `memory` and the `layout` now, filled in by
    /// `fill`, and shows it to the observer.
    pub(super) fn snapshot(
        &mut self,
        event: Event,
        epoch: usize,
        memory: MemoryUsage,
        layout: Layout,
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
            micro_batch: layout.micro_batch(),
            accumulation_steps: layout.micro_steps(),
            elapsed_s: self.started.elapsed().as_secs_f64(),
            ..Snapshot::new(event, epoch, memory)
        };
        fill(&mut snapshot);
        self.writer
            .append(&snapshot)
            .map_err(|e| Error::io(self.writer.path(), e))?;
        match event {
            Event::Epoch => self.tensorboard(|events| events.epoch(&snapshot)),
            Event::Resume => self.tensorboard(|events| events.restart(snapshot.step + 1)),
            Event::RunEnd => self.tensorboard(EventFile::flush),
            _ => {}
        }
        self.observer.snapshot(&snapshot);
        Ok(())
    }
}
