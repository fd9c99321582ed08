//! The epoch loop: steps with the limit checked inside them (and a shrink retried), validation,
//! the epoch's snapshot and checkpoint. Generic over the [`Task`]; nothing here knows a model
//! kind.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use burn::data::dataloader::DataLoader;
use burn::data::dataset::DatasetError;
use burn::module::Module;
use burn::optim::ModuleOptimizer;
use burn::tensor::Device;

use super::checkpoint::{Checkpoint, CheckpointState, Checkpointer};
use super::precision::{GroupOutcome, MixedPrecision, MAX_CONSECUTIVE_SKIPS};
use super::stats::Stats;
use super::step::{accumulate_gradients, build_optimizer, micro_batches, resting_bytes};
use crate::config::{OnLimit, RunConfig};
use crate::data::{item_loader, DataError};
use crate::error::Error;
use crate::memory::{Breach, EpochFigures, EpochProgress, Governor};
use crate::model::initialize;
use crate::task::metrics::{read, HostSums};
use crate::task::{MetricSums, Task};

/// How often, at most, a step's loss is read for progress and the divergence check. Reading the
/// loss waits for the device and costs the step its overlap with the backend's threads:
/// measured on W1 (flex), a read every third step made the median step 20-22 ms against 16 ms
/// without; so it is read at most once per interval, and at each epoch's end.
const REPORT_INTERVAL: Duration = Duration::from_secs(1);

/// Held while a run seeds the device and initialises its model.
static INITIALISING: Mutex<()> = Mutex::new(());

/// One run's epochs.
pub(super) struct Epochs<'a, T: Task> {
    pub(super) config: &'a RunConfig,
    pub(super) task: &'a T,
    pub(super) device: &'a Device,
    pub(super) governor: &'a mut Governor,
    pub(super) stats: &'a mut Stats,
    pub(super) checkpointer: &'a Checkpointer,
    /// The checkpoint a resumed run continues from.
    pub(super) resume: Option<&'a Checkpoint>,
}

/// A training pass's position, for the limit's messages and the progress line.
#[derive(Clone, Copy)]
struct Position {
    epoch: usize,
    step: usize,
}

impl<T: Task> Epochs<'_, T> {
    pub(super) fn train(mut self) -> Result<(), Error> {
        let config = self.config;
        let train_cfg = &config.train;
        let ad_device = match train_cfg.gradient_checkpointing {
            true => self.device.clone().autodiff().gradient_checkpointing(),
            false => self.device.clone().autodiff(),
        };
        let seed = config.run.seed;
        self.governor.begin_epoch();
        let splits = self.task.data();
        self.stats.train_samples = splits.train.len();
        self.stats.valid_samples = splits.valid.as_ref().map_or(0, |v| v.len());
        if self.stats.train_samples == 0 {
            return Err(Error::Data(DataError::Unusable(
                "the training split is empty".into(),
            )));
        }
        let workers = config.data.num_workers;
        let train_loader = item_loader(
            splits.train,
            train_cfg.batch_size,
            Some(config.run.seed),
            workers,
        );
        let valid_loader = splits
            .valid
            .map(|valid| item_loader(valid, train_cfg.batch_size, None, workers));
        let mut model = {
            // flex's generator is one per process, and Burn draws a parameter's initial values
            // when it is first used: a run in another thread could draw in between. The runs
            // of one process take turns from the seed to the last parameter.
            let _turn = INITIALISING.lock().unwrap_or_else(PoisonError::into_inner);
            ad_device.seed(seed);
            let model = self.task.model(&ad_device);
            initialize(&model);
            model
        };
        let mut optimizer = build_optimizer(train_cfg);
        let mut precision = MixedPrecision::from_config(train_cfg);
        let to_come = resting_bytes(&model, train_cfg);
        let micro_batches_per_epoch = self.stats.train_samples.div_ceil(train_cfg.batch_size);
        let steps_per_epoch = micro_batches_per_epoch.div_ceil(train_cfg.accumulation_steps);

        // Before the first step: reserve, and check that the resting footprint fits.
        let start = match self.resume {
            None => {
                self.governor.run_start(to_come)?;
                self.checkpoint(CheckpointState::at_epoch(0, 0), &model, &optimizer)?;
                CheckpointState::at_epoch(0, 0)
            }
            Some(checkpoint) => {
                let state = checkpoint.state.clone();
                if state.step_in_epoch >= steps_per_epoch {
                    let message = format!(
                        "step_in_epoch = {} but an epoch of this data has {steps_per_epoch} steps",
                        state.step_in_epoch
                    );
                    return Err(Error::checkpoint(checkpoint.dir.join("meta.json"), message));
                }
                checkpoint.load_model(&mut model)?;
                optimizer = checkpoint.load_optimizer(optimizer)?;
                if let Some(scaler) = &state.loss_scaler {
                    precision = MixedPrecision::new(train_cfg.precision, Some(scaler.clone()));
                }
                self.governor.set_step(state.step);
                let detail = checkpoint.describe();
                self.governor.resume_start(state.epoch, to_come, detail)?;
                // The data order: the loader reshuffles from one generator at each epoch's
                // start, so the epochs done are started (and dropped) again.
                for _ in 0..state.epoch {
                    drop(train_loader.iter());
                }
                state
            }
        };

        let mut last_report = Instant::now();
        for epoch in start.epoch + 1..=train_cfg.epochs {
            self.governor.begin_epoch();
            let epoch_start = Instant::now();
            let mut sums = MetricSums::default();
            let mut step_in_epoch = 0;
            let mut skipped = 0;
            let mut group = Vec::with_capacity(train_cfg.accumulation_steps);
            let mut batches = train_loader.iter();
            let mut restored_samples = 0;
            if epoch == start.epoch + 1 && start.step_in_epoch > 0 {
                // Inside the epoch: its first steps' batches are drawn and passed over, and
                // its figures so far come back from the checkpoint.
                for _ in 0..start.step_in_epoch * train_cfg.accumulation_steps {
                    batches.next().transpose().map_err(loader_error)?;
                }
                if let Some(host) = &start.epoch_sums {
                    sums = MetricSums::from_host(host, &ad_device);
                    restored_samples = sums.samples();
                }
                step_in_epoch = start.step_in_epoch;
                skipped = start.epoch_skipped;
            }
            loop {
                let next = batches.next().transpose().map_err(loader_error)?;
                let done = next.is_none();
                group.extend(next);
                if group.len() < train_cfg.accumulation_steps && !done {
                    continue;
                }
                if group.is_empty() {
                    break;
                }
                let at = Position {
                    epoch,
                    step: self.stats.steps + 1,
                };
                self.governor.begin_step();
                // Retry the group with smaller micro-batches until it fits or the limit fails;
                // only then are its items kept for a retry.
                let retry = config.memory.on_limit == OnLimit::Shrink;
                let accumulated = loop {
                    // Dropout draws from the device's generator, whose state cannot be saved:
                    // it is seeded per step instead, so a resumed run draws what an
                    // uninterrupted one does.
                    ad_device.seed(step_seed(seed, at.step));
                    let layout = self.governor.layout();
                    let micro = micro_batches(&mut group, layout.micro_batch(), retry);
                    let governor = &mut *self.governor;
                    let attempt = accumulate_gradients(
                        self.task,
                        &model,
                        micro,
                        &ad_device,
                        &precision,
                        || governor.check_step(at.epoch, at.step),
                    );
                    match attempt {
                        Ok(acc) => break acc,
                        Err(breach) => self.breach(breach, at)?,
                    }
                    self.governor.begin_window();
                };
                let step_loss = accumulated.loss();
                let mut grads = accumulated.grads;
                match precision
                    .finish_group(&mut grads, &model)
                    .map_err(Error::device)?
                {
                    GroupOutcome::Apply => model = optimizer.step(train_cfg.lr, model, grads),
                    GroupOutcome::Skip => {
                        drop(grads);
                        skipped += 1;
                        self.stats.skipped_steps += 1;
                        let scaler = precision.scaler().expect("only loss scaling skips");
                        if scaler.consecutive_skips() >= MAX_CONSECUTIVE_SKIPS {
                            return Err(Error::LossScaleCollapsed {
                                epoch,
                                step: at.step,
                                skips: scaler.consecutive_skips(),
                                scale: scaler.scale(),
                            });
                        }
                    }
                }
                // The update allocates too (optimizer state on the first step).
                if let Err(breach) = self.governor.check_step(epoch, at.step) {
                    self.breach(breach, at)?;
                }
                group.clear();
                step_in_epoch += 1;
                self.stats.steps = at.step;
                self.governor.set_step(at.step);
                sums.merge(accumulated.sums);
                self.governor.observer().step_done(epoch, step_in_epoch);
                // Checkpoints inside the epoch only (its end writes one anyway), and never of
                // a diverged model: the loss is read first, as for progress.
                let checkpoint = step_in_epoch < steps_per_epoch
                    && (config.checkpoint.every_steps).is_some_and(|n| at.step % n == 0);
                let report = done || last_report.elapsed() >= REPORT_INTERVAL;
                if checkpoint || report {
                    let loss = read(step_loss).map_err(Error::device)?;
                    if !loss.is_finite() {
                        return Err(Error::Diverged {
                            epoch,
                            step: at.step,
                            loss,
                        });
                    }
                    if report {
                        last_report = Instant::now();
                        self.governor.observer().step(&EpochProgress {
                            epoch,
                            epochs: train_cfg.epochs,
                            step: step_in_epoch,
                            steps: steps_per_epoch,
                            loss,
                        });
                    }
                    if checkpoint {
                        let mut state = self.state(epoch - 1, &precision);
                        state.step_in_epoch = step_in_epoch;
                        state.epoch_sums = sums.to_host().map_err(Error::device)?;
                        state.epoch_skipped = skipped;
                        self.checkpoint(state, &model, &optimizer)?;
                    }
                }
                if done {
                    break;
                }
            }
            let samples = sums.samples();
            let (train_loss, train_metrics) = match sums.finish().map_err(Error::device)? {
                Some(figures) => figures,
                None => (f64::NAN, BTreeMap::new()),
            };
            // The in-epoch check reads the loss about once a second; this one sees every step.
            if samples > 0 && !train_loss.is_finite() {
                return Err(Error::Diverged {
                    epoch,
                    step: self.stats.steps,
                    loss: train_loss,
                });
            }
            let samples_per_sec =
                (samples - restored_samples) as f64 / epoch_start.elapsed().as_secs_f64().max(1e-9);
            // Validation in its own window, so that the limit is checked against what it
            // held (the epoch's peak also holds any attempt that shrank).
            self.governor.begin_window();
            let validation = match &valid_loader {
                Some(loader) => Some(self.validate(&model, loader.as_ref(), &precision)?),
                None => None,
            };
            let window = self.governor.window();
            let mut metrics: BTreeMap<String, f64> = train_metrics
                .into_iter()
                .map(|(k, v)| (format!("train_{k}"), v))
                .collect();
            let val_loss = validation.map(|(loss, val_metrics)| {
                metrics.extend(
                    val_metrics
                        .into_iter()
                        .map(|(k, v)| (format!("val_{k}"), v)),
                );
                loss
            });
            self.stats
                .epoch(epoch, train_loss, val_loss, samples_per_sec);
            self.stats.loss_scale = precision.scaler().map(|s| s.scale());
            self.governor.epoch_snapshot(
                epoch,
                EpochFigures {
                    loss: Some(train_loss),
                    val_loss,
                    samples_per_sec: Some(samples_per_sec),
                    loss_scale: precision.scaler().map(|s| (s.scale(), skipped)),
                    metrics,
                },
            )?;
            let state = self.state(epoch, &precision);
            self.checkpoint(state, &model, &optimizer)?;
            self.governor.close_epoch(epoch, &window)?;
        }
        Ok(())
    }

    /// Acts on a breach inside step `at`: a shrink is recorded (the caller retries), a failure
    /// becomes the run's error.
    fn breach(&mut self, breach: Breach, at: Position) -> Result<(), Error> {
        match breach {
            Breach::Shrink { observed } => self.governor.shrink(at.epoch, at.step, observed),
            Breach::Fail(e) => Err(self.governor.fail(e)),
        }
    }

    /// The run's state after `epoch` epochs, for a checkpoint.
    fn state(&self, epoch: usize, precision: &MixedPrecision) -> CheckpointState {
        CheckpointState {
            epoch,
            step: self.stats.steps,
            step_in_epoch: 0,
            layout_factor: self.governor.layout().factor,
            loss_scaler: precision.scaler().cloned(),
            skipped_steps: self.stats.skipped_steps,
            epoch_sums: None::<HostSums>,
            epoch_skipped: 0,
        }
    }

    /// Writes, under the limit, the checkpoint of `state`.
    fn checkpoint(
        &mut self,
        state: CheckpointState,
        model: &T::Model,
        optimizer: &ModuleOptimizer,
    ) -> Result<(), Error> {
        let checkpointer = self.checkpointer;
        self.governor.checkpoint(state.epoch, || {
            checkpointer.save_state(&state, model, optimizer)
        })?;
        Ok(())
    }

    /// Mean loss and metrics of `model` (in inference mode) over `loader`.
    fn validate(
        &mut self,
        model: &T::Model,
        loader: &dyn DataLoader<Vec<T::Item>>,
        precision: &MixedPrecision,
    ) -> Result<(f64, BTreeMap<String, f64>), Error> {
        let model = precision.compute_model(&model.valid());
        let cx = precision.compute();
        let mut sums = MetricSums::default();
        // In micro-batches, like training: a limit that shrank the training step holds for
        // validation too.
        let micro = self.governor.layout().micro_batch();
        for items in loader.iter() {
            let items = items.map_err(loader_error)?;
            for chunk in micro_batches(&mut vec![items], micro, false) {
                let n = chunk.len();
                let batch = self.task.batcher().batch(chunk, self.device);
                let out = self.task.valid_step(&model, batch, &cx);
                sums.add(out.loss, out.metrics, n);
            }
        }
        sums.finish()
            .map_err(Error::device)?
            .ok_or_else(|| Error::Data(DataError::Unusable("the validation split is empty".into())))
    }
}

/// The device generator's seed for step `step` of a run seeded with `seed` (SplitMix64's
/// finaliser, so that neighbouring steps get unrelated seeds).
fn step_seed(seed: u64, step: usize) -> u64 {
    let mut z = seed ^ (step as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn loader_error(e: DatasetError) -> Error {
    Error::Data(DataError::Unusable(format!("data loader: {e}")))
}
