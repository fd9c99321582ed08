//! [`HandLoop`]: tidemark around a training loop the user writes, in a few calls, as Lightning
//! Fabric and Accelerate allow: [`setup`](HandLoop::setup) from a config (the run directory
//! made, the model built on the configured device, the optimizer, schedule, mixed precision,
//! clipping and early stopping from `[train]`, the memory layer opened),
//! [`step`](HandLoop::step) for each optimizer step, [`validate`](HandLoop::validate) and
//! [`end_epoch`](HandLoop::end_epoch) for each epoch, and [`finish`](HandLoop::finish).
//!
//! It is the trainer's loop: [`Trainer::fit`](crate::Trainer::fit) opens one and drives it over
//! its task's loaders with these calls (`train/epochs`). `step` is a whole step: the micro-batches the limit allows
//! (retried smaller under `on_limit = "shrink"`), accumulation, the loss scaling, the memory
//! checks after each backward pass, before the update and after it, the divergence check, the
//! schedule's rate, clipping and the update. No phase hangs on a call the loop could forget:
//! an epoch the loop does not end is ended by `finish`, with its snapshot and checkpoint.
//!
//! ```no_run
//! # use burn::nn::{Linear, LinearConfig};
//! # use burn::tensor::{Tensor, Device};
//! let config = tidemark::config::ConfigBuilder::new("hand").batch_size(64).build()?;
//! let mut run = tidemark::HandLoop::setup(config, 1024, |d: &Device| -> Linear {
//!     LinearConfig::new(8, 1).init(d)
//! })?;
//! # let (x, y): (Tensor<2>, Tensor<2>) = todo!();
//! for _epoch in run.epochs() {
//!     for start in (0..1024).step_by(64) {
//!         run.step(64, |model, rows| {
//!             let rows = start + rows.start..start + rows.end;
//!             let xb = x.clone().slice([rows.clone(), 0..8]);
//!             let yb = y.clone().slice([rows, 0..1]);
//!             (model.forward(xb) - yb).powi_scalar(2).mean()
//!         })?;
//!     }
//!     run.end_epoch(Default::default())?;
//! }
//! let summary = run.finish()?;
//! # Ok::<(), tidemark::Error>(())
//! ```

mod early;
mod end;
mod fit;
mod open;
mod step;
mod task;
mod validate;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use burn::module::Module;
use burn::tensor::Device;

pub(in crate::train) use open::{
    empty_training_split, seeded_model, steps_per_epoch, DataBytes, Opening,
};
pub use task::EpochBatches;

use super::checkpoint::Checkpointer;
use super::learner::{Learner, Position, Tally};
use super::recorder::RunRecorder;
use super::resume::Resume;
use super::stats::Stats;
use super::MemoryGuard;
use crate::config::RunConfig;
use crate::error::Error;
use crate::memory::{Footprint, MemoryUsage};
use crate::record::{Observer, Silent};
use crate::task::metrics::DeferredMean;
use crate::task::{Baselines, Compute};

/// A hand-written loop's run: its model, what updates it, and the memory layer around it.
/// [`Trainer::fit`](crate::Trainer::fit) drives one too: its epochs are this loop's calls over
/// the task's loaders.
pub struct HandLoop<M: Module + 'static> {
    pub(in crate::train) config: RunConfig,
    /// The memory layer: it measures and decides.
    pub(in crate::train) guard: MemoryGuard,
    /// What records the run (`snapshots.jsonl`, TensorBoard's events, the observer), beside
    /// the guard: each of the guard's phases takes it.
    pub(in crate::train) rec: RunRecorder,
    /// The model and what updates it.
    pub(in crate::train) learner: Learner<M>,
    checkpointer: Checkpointer,
    pub(in crate::train) stats: Stats,
    /// What the run's tensors hold by kind, as set up (the advisor's levers).
    pub(in crate::train) footprint: Footprint,
    /// The epoch the loop is in (0 before the first step).
    pub(in crate::train) epoch: usize,
    /// What the run is, beside its config.
    named: Named,
    /// Where the loop stands in its epoch.
    place: Place,
    /// How the run goes on or stops.
    course: Course,
    /// The run's clock.
    clock: Clock,
}

/// What a run is, beside its config: its directory, its device and what its summary calls it.
struct Named {
    run_dir: PathBuf,
    /// Held to the run's end where the run is exclusive: no other process trains it meanwhile.
    _lock: Option<crate::train::run_dir::RunLock>,
    /// The configured device, without autodiff: validation's.
    base_device: Device,
    /// What the summary calls the task: "hand loop" unless the loop names it.
    task: String,
    /// The task's baselines, for the summary.
    baselines: Baselines,
}

/// Where a loop stands in its epoch: whether the epoch is open, its figures so far, and what
/// the next step or the epoch's end takes from before.
struct Place {
    /// Whether the epoch is open.
    open: bool,
    /// A new run before its first step, which first fits the micro-batch (under
    /// `on_limit = "fit"`) and writes checkpoint 0, from which the run can start again.
    starting: bool,
    /// The open epoch's figures so far.
    tally: Tally,
    /// The last step's loss where nothing read it, on the device.
    unread: Option<(DeferredMean, Position)>,
    /// A run resumed inside an epoch: that epoch's figures so far, until it opens.
    resumed: Option<Tally>,
    /// What [`validate`](HandLoop::validate) held, for the limit's check at the epoch's end.
    validated: Option<MemoryUsage>,
    /// Whether a resumed run's loader order was replayed
    /// ([`epoch_batches`](HandLoop::epoch_batches)).
    replayed: bool,
    /// Optimizer steps in a full epoch, for `checkpoint.every_steps`.
    steps_per_epoch: usize,
}

/// How a run goes on or stops.
struct Course {
    /// What a resumed run was resumed from: kept to the run's end, as it was read before the
    /// guard's baseline.
    resume: Option<Resume>,
    /// The error that stopped a step, for the summary: the run cannot go on after it.
    failed: Option<Failed>,
    /// Set to stop the run: the step in progress writes a checkpoint where it is and returns
    /// [`Error::Interrupted`], as does any step after.
    stop: Vec<Arc<AtomicBool>>,
    /// The run's memory lease on its device, where the device has a budget: given back when
    /// the loop is dropped, after its run's end has given its memory back.
    lease: Option<crate::lease::Lease>,
}

/// A run's clock.
struct Clock {
    /// When the run was asked for: its wall time counts from here.
    started: Instant,
    /// The wall time of a resumed run's earlier processes.
    earlier_s: f64,
    /// When progress was last reported (about once a second).
    last_report: Instant,
}

/// A failure that ended a loop's steps.
struct Failed {
    message: String,
    /// Stopped on request: the run is left as a killed one, without a summary.
    interrupted: bool,
}

impl<M: Module + 'static> HandLoop<M> {
    /// Sets up a run of `config` in a new run directory under `run.output_dir`: the model from
    /// `model` on the configured device (autodiff, seeded with `run.seed`), the optimizer,
    /// schedule (over `samples` training samples an epoch), mixed precision and clipping from
    /// `[train]`, and the memory layer from `[memory]`, which records the run's start.
    ///
    /// Under a limit, `memory.on_limit = "shrink"` halves the micro-batch at a breach and runs
    /// the step again; `"fit"` probes the first step with the loop's own loss at the configured
    /// micro-batch and at halves of it, and trains at the largest that fits; both keep the
    /// effective batch. A limit below what the run holds at rest (with the gradients and
    /// optimizer state its first step allocates) refuses the run here, which then ends as a
    /// failed run does, its `summary.json` written.
    pub fn setup(
        config: RunConfig,
        samples: usize,
        model: impl FnOnce(&Device) -> M,
    ) -> Result<Self, Error> {
        Self::setup_with(config, samples, model, Silent)
    }

    /// [`setup`](Self::setup), reporting progress to `observer`.
    pub fn setup_with(
        config: RunConfig,
        samples: usize,
        model: impl FnOnce(&Device) -> M,
        observer: impl Observer + 'static,
    ) -> Result<Self, Error> {
        let opening = Opening::hand_loop(samples);
        Self::open(config, opening, model, Box::new(observer), None)
    }

    /// Continues the hand loop's run in `run_dir` from its latest checkpoint: the weights
    /// (loaded into the model `model` builds), the optimizer's state, the schedule, the loss
    /// scaler and a shrunk micro-batch come back, and [`epochs`](Self::epochs) gives the
    /// epochs still to train. `config` must match the run's own `config.toml` but in the keys
    /// a resume may change (`train.epochs`, the `[memory]` keys, ...). The data order of the
    /// epochs left is the loop's to reproduce; with it, the run ends where an uninterrupted
    /// one does.
    pub fn resume(
        config: RunConfig,
        run_dir: impl AsRef<Path>,
        samples: usize,
        model: impl FnOnce(&Device) -> M,
    ) -> Result<Self, Error> {
        Self::resume_with(config, run_dir, samples, model, Silent)
    }

    /// [`resume`](Self::resume), reporting progress to `observer`.
    pub fn resume_with(
        config: RunConfig,
        run_dir: impl AsRef<Path>,
        samples: usize,
        model: impl FnOnce(&Device) -> M,
        observer: impl Observer + 'static,
    ) -> Result<Self, Error> {
        let resume = Resume::open(run_dir.as_ref(), &config, &[], None, false)?;
        let opening = Opening::hand_loop(samples);
        Self::open(config, opening, model, Box::new(observer), Some(resume))
    }

    /// The epochs to train: `1..=train.epochs`, or those after a resumed run's checkpoint.
    pub fn epochs(&self) -> std::ops::RangeInclusive<usize> {
        match self.learner.stopped_early() {
            // None left: early stopping has ended the run.
            true => self.epoch + 1..=self.epoch,
            false => self.epoch + 1..=self.config.train.epochs,
        }
    }

    /// The model as it stands.
    pub fn model(&self) -> &M {
        self.learner.model()
    }

    /// The autodiff device the model lives on (for the loop's own tensors).
    pub fn device(&self) -> &Device {
        &self.learner.device
    }

    /// The run directory.
    pub fn run_dir(&self) -> &Path {
        &self.named.run_dir
    }

    /// The run's compute precision (`train.precision`), for the loop's loss: the model a step
    /// hands the closure is already in it, and a task's `step` takes it to cast its inputs
    /// and outputs, as the trainer's steps do.
    pub fn compute(&self) -> Compute {
        self.learner.precision.compute()
    }

    /// The steps of the first epoch of [`epochs`](Self::epochs) that a run resumed from a
    /// checkpoint inside that epoch (`checkpoint.every_steps`) has trained already: the loop
    /// passes over that many of the epoch's steps, in its data order. 0 once the epoch is
    /// open, and for any other run.
    pub fn steps_done_in_epoch(&self) -> usize {
        self.place.resumed.as_ref().map_or(0, |tally| tally.steps)
    }

    /// Names what the loop trains, for the summary's `task` (and `tidemark report`'s table):
    /// "hand loop" unless named.
    pub fn name_task(&mut self, task: impl Into<String>) {
        self.named.task = task.into();
    }

    /// The micro-batch size a step runs at now (smaller after a shrink).
    pub fn micro_batch(&self) -> usize {
        self.guard.layout().micro_batch()
    }

    /// Whether the run was resumed from a checkpoint.
    pub(in crate::train) fn is_resumed(&self) -> bool {
        self.course.resume.is_some()
    }

    /// Records `e` as what stopped the run: no call after it goes on.
    fn fail(&mut self, e: &Error) {
        self.course.failed = Some(Failed {
            message: e.to_string(),
            interrupted: matches!(e, Error::Interrupted),
        });
    }

    /// Stops the run once `stop` is set, for a caller that runs the loop on its own ends (a
    /// signal handler, the learning-rate finder stopping the loop it sweeps): the step in
    /// progress writes a checkpoint where it is (inside an epoch; a new run's first step, its
    /// checkpoint 0) and returns [`Error::Interrupted`], as does every step after; the run is
    /// left as a killed run is, and [`finish`](Self::finish) writes no summary. Several flags:
    /// the first set.
    pub(crate) fn stop_when(&mut self, stop: Arc<AtomicBool>) {
        self.course.stop.push(stop);
    }
}
