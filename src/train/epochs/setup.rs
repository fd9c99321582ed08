//! Set-up: the loaders, and the model (seeded and initialised) in its [`Learner`] with the
//! optimizer, the precision, the schedule, clipping and early stopping: everything a run
//! trains with.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use burn::data::dataloader::DataLoader;
use burn::module::Module;
use burn::tensor::Device;

use super::Epochs;
use crate::config::{ConfigError, EarlyStoppingConfig, ScheduleConfig, ScheduleKind, TrainConfig};
use crate::data::{item_loader, DataError};
use crate::error::Error;
use crate::memory::{Footprint, MemorySource};
use crate::model::initialize;
use crate::task::Task;
use crate::train::learner::{run_device, Learner};
use crate::train::step::footprint;

/// Held while a run seeds the device and initialises its model.
static INITIALISING: Mutex<()> = Mutex::new(());

/// Batches of items, as the loaders yield them.
pub(super) type Loader<T> = Arc<dyn DataLoader<Vec<<T as Task>::Item>>>;

/// Everything a run trains with.
pub(super) struct Run<T: Task> {
    /// The model and what updates it.
    pub(super) learner: Learner<T::Model>,
    pub(super) train_loader: Loader<T>,
    pub(super) valid_loader: Option<Loader<T>>,
    /// Optimizer steps in a full epoch.
    pub(super) steps_per_epoch: usize,
    /// Bytes the first step will add at rest (gradients, optimizer state).
    pub(super) to_come: u64,
    /// What the run's tensors hold by kind.
    pub(super) footprint: Footprint,
    /// When progress was last shown.
    pub(super) last_report: Instant,
}

impl<T: Task> Run<T> {
    /// The model being trained.
    pub(super) fn model(&self) -> &T::Model {
        self.learner.model()
    }
}

impl<T: Task> Epochs<'_, T> {
    /// Builds the run: data first (an empty training split fails before any model exists).
    pub(super) fn set_up(&mut self) -> Result<Run<T>, Error> {
        let config = self.config;
        let train = &config.train;
        let device = run_device(self.device, train);
        let splits = self.task.data();
        self.stats.train_samples = splits.train.len();
        self.stats.valid_samples = splits.valid.as_ref().map_or(0, |v| v.len());
        if self.stats.train_samples == 0 {
            return Err(empty_training_split());
        }
        if let Some(early) = &train.early_stopping {
            if splits.valid.is_none() {
                return Err(needs_validation(early));
            }
        }
        let workers = config.data.num_workers;
        let seed = config.run.seed;
        let train_loader = item_loader(splits.train, train.batch_size, Some(seed), workers);
        let valid_loader = splits
            .valid
            .map(|valid| item_loader(valid, train.batch_size, None, workers));
        let model = self.fresh_model(&device);
        let steps_per_epoch = steps_per_epoch(train, self.stats.train_samples);
        let total_steps = steps_per_epoch * train.epochs;
        if let Some(schedule) = &train.schedule {
            for line in schedule_notes(schedule, total_steps) {
                self.guard.recorder_mut().tell(&line);
            }
        }
        // The dataset's bytes are in the figures only where they are host bytes.
        let data = match self.guard.source() {
            MemorySource::Host => self.data_bytes,
            MemorySource::CubeclPool => Some(0),
        };
        let footprint = footprint(&model, train, data);
        Ok(Run {
            to_come: footprint.gradients + footprint.device_optimizer(),
            footprint,
            learner: Learner::new(train, seed, device, model, total_steps),
            train_loader,
            valid_loader,
            steps_per_epoch,
            last_report: Instant::now(),
        })
    }
}

impl<T: Task> Epochs<'_, T> {
    /// The task's model on `device`, initialised from the run's seed.
    pub(super) fn fresh_model(&self, device: &Device) -> T::Model {
        seeded_model(self.task, self.config.run.seed, device)
    }
}

/// `task`'s model on `device`, initialised from `seed`.
pub(in crate::train) fn seeded_model<T: Task>(task: &T, seed: u64, device: &Device) -> T::Model {
    seeded(seed, device, |device| task.model(device))
}

/// The model `build` makes on `device`, from `seed`, its parameters drawn: a task's, or a hand
/// loop's.
pub(in crate::train) fn seeded<M: Module>(
    seed: u64,
    device: &Device,
    build: impl FnOnce(&Device) -> M,
) -> M {
    // flex's generator is one per process, and Burn draws a parameter's initial values when it
    // is first used: a run in another thread could draw in between. The runs of one process
    // take turns from the seed to the last parameter.
    let _turn = INITIALISING.lock().unwrap_or_else(PoisonError::into_inner);
    device.seed(seed);
    let model = build(device);
    initialize(&model);
    model
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

fn needs_validation(early: &EarlyStoppingConfig) -> Error {
    Error::Config(ConfigError {
        origin: "[train.early_stopping]".into(),
        key: Some("train.early_stopping.monitor".into()),
        message: format!(
            "train.early_stopping.monitor = \"{}\" needs a validation split, and this task has \
             none (set data.validation_fraction > 0, or give the task validation data)",
            early.monitor
        ),
    })
}
