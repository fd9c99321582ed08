//! A run opened: a new one (its directory made, its model seeded) or one resumed from its
//! latest checkpoint (weights, optimizer, schedule, loss scaler, early stopping and
//! micro-batch back), its [`Learner`] built from `[train]`. A hand loop opens one from its
//! `setup` or `resume`; the trainer from its task ([`Opening`]).

use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use burn::module::Module;
use burn::tensor::Device;

use super::{Clock, Course, HandLoop, Named, Place};
use crate::config::{RunConfig, ScheduleConfig, ScheduleKind, TrainConfig};
use crate::data::DataError;
use crate::error::Error;
use crate::lease::{Lease, Leasing, Probe};
use crate::memory::MemorySource;
use crate::model::initialize;
use crate::record::Observer;
use crate::task::{Baselines, Task};
use crate::train::checkpoint::{Checkpoint, Checkpointer};
use crate::train::learner::{run_device, Learner, Tally};
use crate::train::recorder::RunRecorder;
use crate::train::resume::{open_run, Resume};
use crate::train::run_dir;
use crate::train::step::footprint;
use crate::train::MemoryGuard;

/// Held while a run seeds the device and initialises its model.
static INITIALISING: Mutex<()> = Mutex::new(());

/// What a run trains on, as its loop knows it when it opens.
pub(in crate::train) struct Opening<'a> {
    /// What the summary calls the task.
    pub(in crate::train) task: String,
    /// The config sections the task is described by ([`Task::config_sections`]): the others
    /// of `[model]` and `[data]` are left out of the run's `config.toml`.
    pub(in crate::train) owned: &'a [&'a str],
    pub(in crate::train) baselines: Baselines,
    /// Training samples an epoch.
    pub(in crate::train) samples: usize,
    /// Validation samples, where the loop knows them before it validates.
    pub(in crate::train) valid_samples: usize,
    pub(in crate::train) data: DataBytes,
    /// Told to the observer after the run directory, before anything else.
    pub(in crate::train) notes: Vec<String>,
    /// When the run was asked for: its wall time counts from here.
    pub(in crate::train) started: Instant,
    /// How a run under a device's budget without a `memory.limit` sizes its lease: the
    /// trainer probes its task's step; a hand loop has none, and needs a limit.
    pub(in crate::train) probe: Option<Probe<'a>>,
    /// Whether the run holds its directory's lock ([`Trainer::exclusive`](crate::Trainer::exclusive)).
    pub(in crate::train) exclusive: bool,
    /// The lock of a resumed run's directory, where the trainer took it before reading the run.
    pub(in crate::train) locked: Option<run_dir::RunLock>,
}

/// The dataset's bytes in the run's figures.
pub(in crate::train) enum DataBytes {
    /// Not known (a hand loop's data is its own).
    Unknown,
    /// Counted by the allocator as a task loaded it (where it did): in the figures on a
    /// device whose memory is host memory, none on one with memory of its own.
    Counted(Option<u64>),
}

impl DataBytes {
    /// The bytes the run's figures count for the data, where `source` measures them: all of
    /// it where the device's memory is the host's, none where the device has its own.
    fn in_figures(self, source: MemorySource) -> Option<u64> {
        match (self, source) {
            (DataBytes::Unknown, _) => None,
            (DataBytes::Counted(bytes), MemorySource::Host) => bytes,
            (DataBytes::Counted(_), MemorySource::CubeclPool) => Some(0),
        }
    }
}

impl Opening<'_> {
    /// The run directory's lock where the run is exclusive: the one the trainer took before
    /// reading a resumed run, or taken now in a new run's directory.
    fn lock(&mut self, run_dir: &std::path::Path) -> Result<Option<run_dir::RunLock>, Error> {
        match self.locked.take() {
            Some(held) => Ok(Some(held)),
            None => (self.exclusive).then(|| run_dir::lock(run_dir)).transpose(),
        }
    }
}

impl Opening<'static> {
    /// A hand loop's: `samples` training samples an epoch, nothing else known.
    pub(super) fn hand_loop(samples: usize) -> Self {
        Opening {
            task: "hand loop".into(),
            owned: &[],
            baselines: Baselines::new(),
            samples,
            valid_samples: 0,
            data: DataBytes::Unknown,
            notes: Vec::new(),
            started: Instant::now(),
            probe: None,
            exclusive: false,
            locked: None,
        }
    }
}

impl<M: Module + 'static> HandLoop<M> {
    /// Opens the run on the configured device (autodiff for its steps): new, or `resume`d.
    pub(in crate::train) fn open(
        config: RunConfig,
        mut opening: Opening<'_>,
        model: impl FnOnce(&Device) -> M,
        mut observer: Box<dyn Observer>,
        resume: Option<Resume>,
    ) -> Result<Self, Error> {
        // The lease first: the run waits for room before it holds anything of its own.
        let leasing = crate::lease::begin(&config, &mut *observer, opening.probe)?;
        let base = crate::backend::select(&config.device)?;
        let train = &config.train;
        let (prepared, run_dir, layout) = open_run(&config, &base, resume.as_ref())?;
        let lock = opening.lock(&run_dir)?;
        observer.message(&format!("run directory: {}", run_dir.display()));
        for note in std::mem::take(&mut opening.notes) {
            observer.message(&note);
        }
        // Before the guard's baseline, as all the run keeps after its release.
        let mut stats = resume.as_ref().map(Resume::stats).unwrap_or_default();
        let tensorboard = config.run.tensorboard;
        let mut rec = RunRecorder::open(&run_dir, prepared.started(), observer, tensorboard)?;
        let mut guard = prepared.open(layout)?;
        let per_epoch = steps_per_epoch(train, opening.samples);
        let total_steps = per_epoch * train.epochs;
        for line in (train.schedule.iter()).flat_map(|s| schedule_notes(s, total_steps)) {
            rec.tell(&line);
        }
        // After the guard's baseline, as all the run gives back at its end.
        let device = run_device(&base, train);
        let model = seeded(config.run.seed, &device, model)?;
        let footprint = footprint(&model, train, opening.data.in_figures(guard.source()));
        guard.set_footprint(footprint);
        let mut learner = Learner::new(train, config.run.seed, device, model, total_steps);
        let to_come = footprint.gradients + footprint.device_optimizer();
        let earlier_s = resume.as_ref().map_or(0.0, |r| r.elapsed_s);
        let (epoch, resumed, from) = match &resume {
            None => (0, None, None),
            Some(resume) => restored(&mut learner, resume, per_epoch, train)?,
        };
        // Once a resumed run's checkpoint has loaded: a resume that fails leaves the run's
        // config as it was.
        run_dir::write_config(&run_dir, &config, &opening.task, opening.owned)?;
        stats.train_samples = opening.samples;
        stats.valid_samples = opening.valid_samples;
        let mut run = HandLoop {
            checkpointer: Checkpointer::for_run(&run_dir, &config),
            config,
            guard,
            rec,
            learner,
            stats,
            footprint,
            epoch,
            named: Named {
                run_dir,
                _lock: lock,
                base_device: base,
                task: opening.task,
                baselines: opening.baselines,
            },
            place: Place {
                open: false,
                starting: resume.is_none(),
                tally: Tally::default(),
                unread: None,
                resumed,
                validated: None,
                replayed: false,
                steps_per_epoch: per_epoch,
            },
            course: Course {
                // Kept to the run's end: it was made before the guard's baseline.
                resume,
                failed: None,
                stop: Vec::new(),
                lease: None,
            },
            clock: Clock {
                started: opening.started,
                earlier_s,
                last_report: Instant::now(),
            },
        };
        // The limit's check at rest, with everything the run needs to end as a failed run
        // does (its `run_end` and `summary.json`) where the limit refuses it.
        let (guard, rec) = (&mut run.guard, &mut run.rec);
        let started =
            settle(leasing, guard, rec, &run.named.run_dir, run.epoch).and_then(|lease| {
                run.course.lease = lease;
                match from {
                    None => guard.run_start(rec, to_come),
                    Some((at, detail)) => guard.resume_start(rec, at, to_come, detail),
                }
            });
        match started {
            Ok(()) => Ok(run),
            Err(e) => Err(run.refused(e)),
        }
    }

    /// Ends a run refused before its first step as a failed run ends ([`end_run`]), and
    /// returns the refusal (or the error that kept its summary from being written).
    ///
    /// [`end_run`]: Self::end_run
    fn refused(self, e: Error) -> Error {
        let said = e.to_string();
        match self.end_run(Err(e)) {
            Ok((_, Err(e))) | Err(e) => e,
            // A run ended with an error ends with it; were it not, the refusal still stands.
            Ok((_, Ok(_))) => Error::Device(said),
        }
    }
}

/// The run's lease once it is set up, where it takes one: a probed run's is its probe's step
/// above what it holds now, enforced as its limit before the check at rest.
fn settle(
    leasing: Option<Leasing>,
    guard: &mut MemoryGuard,
    rec: &mut RunRecorder,
    run_dir: &std::path::Path,
    epoch: usize,
) -> Result<Option<Lease>, Error> {
    let Some(leasing) = leasing else {
        return Ok(None);
    };
    let held = guard.readings().held()?;
    let (mut lease, enforce) = leasing.settle(held, &mut Telling(rec))?;
    if enforce {
        guard.lease_limit(lease.bytes());
    }
    lease.note_run(run_dir, epoch);
    Ok(Some(lease))
}

/// The run's recorder as an observer of the lease's lines (a wait, the lease taken).
struct Telling<'a>(&'a mut RunRecorder);

impl Observer for Telling<'_> {
    fn message(&mut self, text: &str) {
        self.0.tell(text);
    }
}

/// What [`restored`] gives: the epoch, the open epoch's figures, where the run resumed from.
type Restored = (usize, Option<Tally>, Option<((usize, usize), String)>);

/// A resumed run's learner restored from its checkpoint: the epoch it goes on from, the open
/// epoch's figures so far (resumed inside an epoch), and where it resumed from, for its
/// `resume` snapshot.
fn restored<M: Module + 'static>(
    learner: &mut Learner<M>,
    resume: &Resume,
    per_epoch: usize,
    train: &TrainConfig,
) -> Result<Restored, Error> {
    let checkpoint = &resume.checkpoint;
    let state = &checkpoint.state;
    inside_an_epoch(checkpoint, per_epoch)?;
    learner.restore(checkpoint, train)?;
    let inside = state.step_in_epoch > 0;
    let resumed = inside.then(|| Tally::resumed(state, &learner.device));
    let from = ((state.epoch, state.step), resume.detail());
    Ok((state.epoch, resumed, Some(from)))
}

/// Refuses a checkpoint inside an epoch past the epoch's `steps` steps (one of other data).
fn inside_an_epoch(checkpoint: &Checkpoint, steps: usize) -> Result<(), Error> {
    let inside = checkpoint.state.step_in_epoch;
    if inside < steps {
        return Ok(());
    }
    let message = format!("step_in_epoch = {inside} but an epoch of this data has {steps} steps");
    Err(Error::checkpoint(checkpoint.dir.join("meta.json"), message))
}

/// `task`'s model on `device`, initialised from `seed`.
pub(in crate::train) fn seeded_model<T: Task>(
    task: &T,
    seed: u64,
    device: &Device,
) -> Result<T::Model, Error> {
    seeded(seed, device, |device| task.model(device))
}

/// The model `build` makes on `device`, from `seed`, its parameters drawn: a task's, or a hand
/// loop's.
pub(in crate::train) fn seeded<M: Module>(
    seed: u64,
    device: &Device,
    build: impl FnOnce(&Device) -> M,
) -> Result<M, Error> {
    // flex's generator is one per process, and Burn draws a parameter's initial values when it
    // is first used: a run in another thread could draw in between. The runs of one process
    // take turns from the seed to the last parameter.
    let _turn = INITIALISING.lock().unwrap_or_else(PoisonError::into_inner);
    device.seed(seed);
    let model = build(device);
    fits_the_device(&model, device)?;
    initialize(&model);
    Ok(model)
}

/// Refuses a model whose parameters alone, as f32, are more than the device's whole memory,
/// from their shapes before any is drawn (Burn draws them when first used): an allocation that
/// large would abort the process instead.
fn fits_the_device<M: Module>(model: &M, device: &Device) -> Result<(), Error> {
    struct Count(u128);
    impl burn::module::ModuleVisitor for Count {
        fn visit_float<const D: usize>(&mut self, param: &burn::module::Param<burn::Tensor<D>>) {
            let shape = param.lazy_shape();
            let n = shape
                .iter()
                .fold(1u128, |n, &d| n.saturating_mul(d as u128));
            self.0 = self.0.saturating_add(n);
        }
    }
    let mut count = Count(0);
    model.visit(&mut count);
    let bytes = count.0.saturating_mul(4);
    let source = crate::memory::MemoryMeter::new(device).source();
    match crate::memory::device_total_memory(device, source) {
        Some(total) if bytes > u128::from(total) => Err(Error::ModelTooLarge {
            params: u64::try_from(count.0).unwrap_or(u64::MAX),
            bytes: u64::try_from(bytes).unwrap_or(u64::MAX),
            total,
            host: source == MemorySource::Host,
        }),
        _ => Ok(()),
    }
}

/// A task with no training items: nothing to step on.
pub(in crate::train) fn empty_training_split() -> Error {
    Error::Data(DataError::Unusable("the training split is empty".into()))
}

/// Optimizer steps in an epoch of `samples` training samples.
pub(in crate::train) fn steps_per_epoch(train: &TrainConfig, samples: usize) -> usize {
    samples
        .div_ceil(train.batch_size)
        .div_ceil(train.accumulation_steps)
}

/// Warnings for decay settings the run is too short to reach. Not errors: a `decay_steps` kept
/// fixed across a resume that raises `train.epochs`, or set high for no decay, is meant.
fn schedule_notes(schedule: &ScheduleConfig, total_steps: usize) -> Vec<String> {
    let after_warmup = total_steps.saturating_sub(schedule.warmup_steps);
    let mut notes = Vec::new();
    let decays = matches!(schedule.kind, ScheduleKind::Cosine | ScheduleKind::Linear);
    match schedule.decay_steps {
        Some(steps) if decays && steps > after_warmup => notes.push(format!(
            "warning: train.schedule.decay_steps = {steps} is longer than the {after_warmup} \
             optimizer steps after the warmup: the rate stops short of min_lr"
        )),
        _ => {}
    }
    match schedule.step_size {
        Some(steps) if schedule.kind == ScheduleKind::Step && steps >= after_warmup => {
            notes.push(format!(
                "warning: train.schedule.step_size = {steps} is not shorter than the \
                 {after_warmup} optimizer steps after the warmup: the rate never decays"
            ))
        }
        _ => {}
    }
    notes
}
