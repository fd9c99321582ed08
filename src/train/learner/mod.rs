//! The [`Learner`]: the model and what updates it (the optimizer, the schedule, mixed
//! precision, clipping, early stopping), with the calls the loop makes. A
//! [`HandLoop`](crate::HandLoop), the trainer's as a hand-written one, holds one, and takes
//! each step (`step`), ends each epoch (`epoch_end`) and writes each checkpoint through it.

mod epoch_end;
mod step;
mod tally;

use burn::module::Module;
use burn::optim::ModuleOptimizer;
use burn::tensor::Device;

pub(super) use step::{read_loss, Position, StepLoss};
pub(super) use tally::Tally;

use super::checkpoint::{Checkpoint, CheckpointState, Checkpointer, Marks, SavedBeside};
use super::decide::{EarlyStop, EarlyStopState, Schedule};
use super::ema::Ema;
use super::optimizer::build_optimizer;
use super::precision::MixedPrecision;
use super::recorder::RunRecorder;
use super::stats::Stats;
use super::step::{Clip, HostMaster};
use super::MemoryGuard;
use crate::config::TrainConfig;
use crate::error::Error;

/// The model being trained and what updates it.
pub(in crate::train) struct Learner<M: Module> {
    /// The autodiff device the steps run on.
    pub(super) device: Device,
    /// `None` only while an update holds it.
    model: Option<M>,
    pub(super) optimizer: ModuleOptimizer,
    /// The master copy of the weights while the update runs in host memory.
    pub(super) master: HostMaster<M>,
    pub(super) precision: MixedPrecision,
    pub(super) schedule: Schedule,
    pub(super) clip: Option<Clip>,
    pub(super) early_stop: Option<EarlyStop>,
    /// `[train.ema]`'s moving average of the weights.
    pub(super) ema: Option<Ema<M>>,
    /// The run's seed: each step seeds the device's generator from it.
    seed: u64,
}

impl<M: Module> Learner<M> {
    /// A new run's learner: `model` on `device` (from [`run_device`]), and the optimizer,
    /// schedule (over `total_steps` optimizer steps), precision, clipping and early stopping
    /// from `train`.
    pub(super) fn new(
        train: &TrainConfig,
        seed: u64,
        device: Device,
        model: M,
        total_steps: usize,
    ) -> Self {
        let ema = (train.ema.as_ref()).map(|config| Ema::new(&model, config, &device));
        Self {
            ema,
            device,
            model: Some(model),
            optimizer: build_optimizer(train),
            master: HostMaster::default(),
            precision: MixedPrecision::from_config(train),
            schedule: Schedule::new(train, total_steps),
            clip: Clip::from_config(train),
            early_stop: (train.early_stopping.clone())
                .map(|c| EarlyStop::new(c, EarlyStopState::default())),
            seed,
        }
    }

    /// Back to `checkpoint`: the weights, the optimizer's state, the schedule, the loss scaler
    /// and early stopping's patience and best so far.
    pub(super) fn restore(
        &mut self,
        checkpoint: &Checkpoint,
        train: &TrainConfig,
    ) -> Result<(), Error> {
        let state = &checkpoint.state;
        checkpoint.load_model(self.model_mut())?;
        self.optimizer = checkpoint.load_optimizer(self.optimizer.clone())?;
        self.master.reset();
        self.schedule = checkpoint.load_schedule(self.schedule.clone())?;
        if let Some(scaler) = &state.loss_scaler {
            self.precision = MixedPrecision::new(train.precision, Some(scaler.clone()));
        }
        if let Some(early) = &mut self.early_stop {
            let saved = state.early_stop.clone().unwrap_or_default();
            *early = EarlyStop::new(early.config().clone(), saved);
        }
        if let Some(ema) = &mut self.ema {
            ema.load(checkpoint)?;
        }
        Ok(())
    }

    /// The weights validation uses: `[train.ema]`'s average where it says so, else the
    /// model's own, without autodiff.
    pub(super) fn for_validation(&self) -> M {
        match &self.ema {
            Some(ema) => ema.for_validation(self.model()),
            None => self.model().valid(),
        }
    }

    /// The model being trained.
    pub(super) fn model(&self) -> &M {
        self.model
            .as_ref()
            .expect("the model is back after every update")
    }

    fn model_mut(&mut self) -> &mut M {
        self.model
            .as_mut()
            .expect("the model is back after every update")
    }

    /// Whether early stopping has ended the run.
    pub(super) fn stopped_early(&self) -> bool {
        (self.early_stop.as_ref()).is_some_and(|e| e.state().stopped_at.is_some())
    }

    /// The run's state after `epoch` epochs, for a checkpoint.
    pub(super) fn state(
        &self,
        stats: &Stats,
        guard: &MemoryGuard,
        epoch: usize,
    ) -> CheckpointState {
        CheckpointState {
            epoch,
            step: stats.steps,
            layout_factor: guard.layout().factor,
            loss_scaler: self.precision.scaler().cloned(),
            skipped_steps: stats.skipped_steps,
            lr: Some(self.schedule.current()),
            clipped_steps: stats.clipped_steps,
            early_stop: self.early_stop.as_ref().map(|e| e.state().clone()),
            valid_micro_batch: stats.valid_micro_batch,
            ..CheckpointState::default()
        }
    }

    /// Writes, under the limit, the checkpoint of `state`, marked with `marks` (early
    /// stopping's best, and the value `checkpoint.keep_best` ranks it by).
    pub(super) fn checkpoint(
        &self,
        (guard, rec): (&mut MemoryGuard, &mut RunRecorder),
        checkpointer: &Checkpointer,
        state: &CheckpointState,
        marks: Marks,
    ) -> Result<(), Error> {
        guard.checkpoint(rec, state.epoch, || {
            let (model, optimizer) = (self.model(), &self.optimizer);
            let mut beside: Vec<&dyn SavedBeside> = vec![&self.schedule];
            beside.extend(self.ema.as_ref().map(|e| e as &dyn SavedBeside));
            checkpointer.save_run(state, model, optimizer, &beside, marks)
        })?;
        Ok(())
    }
}

/// The autodiff device a run's steps take on `device`, with recomputed activations where
/// `train.gradient_checkpointing` asks.
pub(in crate::train) fn run_device(device: &Device, train: &TrainConfig) -> Device {
    match train.gradient_checkpointing {
        true => device.clone().autodiff().gradient_checkpointing(),
        false => device.clone().autodiff(),
    }
}
