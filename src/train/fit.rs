//! [`Trainer`]: a whole run from a [`RunConfig`], writing its run directory as it goes and
//! applying the memory policies at each phase.

use std::path::{Path, PathBuf};
use std::time::Instant;

use burn::data::dataloader::DataLoader;
use burn::module::Module;
use burn::nn::loss::{CrossEntropyLoss, CrossEntropyLossConfig};
use burn::tensor::{Device, Tensor};

use super::checkpoint::Checkpointer;
use super::observer::{EpochProgress, Observer, Silent};
use super::precision::{self, GroupOutcome, MixedPrecision, MAX_CONSECUTIVE_SKIPS};
use super::step::{accumulate_gradients, build_optimizer};
use crate::backend;
use crate::config::{
    to_toml, Backend, ClearPolicy, ConfigError, Execution, MemoryPolicyKind, MemorySize,
    OptimizerKind, Precision, RunConfig,
};
use crate::data::{self, ClassificationBatch};
use crate::error::Error;
use crate::memory::{
    device_total_memory, format_bytes, reset_peak_resident_set, resident_set_bytes, Attempt,
    Executor, LimitExceeded, MemoryProbe, MemorySource, MemoryUsage, Phase, Policies, RunState,
};
use crate::model::Model;
use crate::report::{write_atomic, Event, RunStatus, RunSummary, SnapshotWriter};

/// Trains one run.
///
/// ```no_run
/// let config = tidemark::config::ConfigBuilder::new("demo").build()?;
/// let summary = tidemark::Trainer::new(config).run()?;
/// println!("accuracy {:?}", summary.final_val_accuracy);
/// # Ok::<(), tidemark::Error>(())
/// ```
pub struct Trainer {
    config: RunConfig,
    observer: Box<dyn Observer>,
}

impl Trainer {
    /// A trainer for `config` that reports nothing while it runs.
    pub fn new(config: RunConfig) -> Self {
        Self {
            config,
            observer: Box::new(Silent),
        }
    }

    /// Reports progress to `observer`.
    pub fn observer(mut self, observer: impl Observer + 'static) -> Self {
        self.observer = Box::new(observer);
        self
    }

    /// Runs every epoch and returns the summary, also written to `summary.json`.
    ///
    /// Errors before the run directory exists (bad device, unusable memory settings,
    /// unreadable data) leave nothing on disk. After it, every snapshot written so far stays,
    /// the latest checkpoint stays, a `run_end` event records what the run kept after
    /// releasing its memory, and `summary.json` has status `failed` with the error.
    pub fn run(mut self) -> Result<RunSummary, Error> {
        let started = Instant::now();
        let config = &self.config;
        let device = backend::select(&config.device)?;
        let execution = backend::execution(&config.device)?;
        let precision = config.train.precision;
        if !precision::supported(&device, precision) {
            return Err(Error::Config(ConfigError {
                origin: "[train]".into(),
                key: Some("train.precision".into()),
                message: format!(
                    "train.precision = \"{precision}\" is not supported by the {} device; use \
                     \"f32\"{}",
                    config.device.backend,
                    [Precision::Bf16, Precision::F16]
                        .into_iter()
                        .filter(|&p| p != precision && precision::supported(&device, p))
                        .map(|p| format!(" or \"{p}\""))
                        .collect::<String>()
                ),
            }));
        }
        let mut probe = MemoryProbe::new(&device);
        let source = probe.source();
        let total = device_total_memory(&device, source);
        let policies = Policies::from_config(&config.memory, total)
            .map_err(|message| memory_config_error(&message))?;
        let limit_bytes = config.memory.limit.and_then(|size| size.resolve(total));
        if config.memory.policy == MemoryPolicyKind::Preallocate && source == MemorySource::Host {
            check_host_reservation(config)?;
        }
        // The baseline that clearing is verified against: the backend's one-time state exists
        // (warm-up), nothing of this run does.
        let mut executor = Executor::new(&device, source);
        let before_warm_up = probe.read().map_err(device_error)?;
        executor
            .warm_up(config.memory.clear != ClearPolicy::Never)
            .map_err(device_error)?;
        let baseline = probe.read().map_err(device_error)?;
        let rss_before = resident_set_bytes().unwrap_or(0);
        reset_peak_resident_set();

        let dataset = data::load(&config.data, config.run.seed)?;
        if let crate::config::ModelConfig::Cnn(cnn) = &config.model {
            let per_sample: usize = cnn.input.iter().product();
            if per_sample != dataset.features {
                return Err(Error::Config(ConfigError {
                    origin: "[model]".into(),
                    key: Some("model.input".into()),
                    message: format!(
                        "model.input = {:?} is {per_sample} values per sample, but the data has \
                         {} features",
                        cnn.input, dataset.features
                    ),
                }));
            }
        }
        let run_dir = create_run_dir(&config.run.output_dir, &config.run.name)?;
        self.observer
            .message(&format!("run directory: {}", run_dir.display()));
        if config.device.backend == Backend::Flex {
            self.observer.message(
                "memory: flex has no device pools; figures are host heap bytes counted by \
                 tidemark's allocator (reserved = the process's anonymous resident memory)",
            );
            if config.device.execution == Some(Execution::Fused) {
                self.observer.message(
                    "execution: flex has no fused mode (kernel fusion exists for the CubeCL \
                     backends); this run executes eagerly, as \"eager\" would",
                );
            }
        }
        if precision != Precision::F32 {
            self.observer.message(&format!(
                "precision: {precision} compute, f32 weights and optimizer state{}",
                match config.train.loss_scaling {
                    crate::config::LossScaling::Dynamic => format!(
                        ", dynamic loss scaling from {}",
                        config.train.initial_loss_scale
                    ),
                    crate::config::LossScaling::Off => String::new(),
                }
            ));
        }
        write_atomic(&run_dir.join("config.toml"), to_toml(config).as_bytes())
            .map_err(|e| Error::io(run_dir.join("config.toml"), e))?;
        let snapshots = run_dir.join("snapshots.jsonl");
        let mut run = Run {
            config,
            observer: self.observer.as_mut(),
            writer: SnapshotWriter::open(&snapshots).map_err(|e| Error::io(&snapshots, e))?,
            executor,
            probe,
            policies,
            checkpointer: Checkpointer::new(&run_dir),
            baseline,
            rss_before,
            factor: 1,
            previous_attempt: None,
            epoch_in_use: Vec::new(),
            started,
            summary: RunSummary {
                name: config.run.name.clone(),
                run_dir: run_dir.clone(),
                status: RunStatus::Completed,
                backend: config.device.backend.to_string(),
                memory_source: source,
                execution: execution.to_string(),
                precision: precision.to_string(),
                loss_scale: None,
                skipped_steps: 0,
                epochs: 0,
                steps: 0,
                train_samples: dataset.train.len(),
                valid_samples: dataset.valid.len(),
                first_loss: None,
                final_loss: None,
                final_val_loss: None,
                final_val_accuracy: None,
                peak_bytes_in_use: 0,
                peak_bytes_reserved: 0,
                samples_per_sec: None,
                micro_batch: config.train.batch_size,
                accumulation_steps: config.train.accumulation_steps,
                memory_actions: 0,
                baseline_bytes_reserved: baseline.bytes_reserved,
                device_init_bytes: baseline.bytes_in_use as i64
                    - before_warm_up.bytes_in_use as i64,
                retained: None,
                limit_bytes,
                growth_alarm: None,
                checkpoint: None,
                wall_time_s: 0.0,
            },
        };
        // Every tensor of the run lives inside `train`, so all are dropped when it returns,
        // whether it succeeded or not; `finish` then releases and verifies.
        let result = run.train(&device, dataset);
        let finished = run.finish();
        let result = result.and(finished);
        run.draw_memory();
        if let Err(e) = &result {
            run.summary.status = RunStatus::Failed(e.to_string());
        }
        run.summary.wall_time_s = started.elapsed().as_secs_f64();
        let summary_path = run_dir.join("summary.json");
        let json = serde_json::to_vec_pretty(&run.summary).expect("summaries serialise");
        write_atomic(&summary_path, &json).map_err(|e| Error::io(&summary_path, e))?;
        result.map(|()| run.summary)
    }
}

/// On the host a reservation is taken from the machine's RAM, which other processes share: it
/// must be a size in bytes, and fit in what is available.
fn check_host_reservation(config: &RunConfig) -> Result<(), Error> {
    match config.memory.preallocate {
        Some(MemorySize::Bytes(bytes)) => {
            let available = crate::memory::available_host_memory();
            match available {
                Some(available) if bytes > available => Err(memory_config_error(&format!(
                    "memory.preallocate = \"{}\" is more than the {} of RAM available on \
                     this machine",
                    format_bytes(bytes),
                    format_bytes(available)
                ))),
                _ => Ok(()),
            }
        }
        Some(MemorySize::Fraction(share)) => Err(memory_config_error(&format!(
            "memory.preallocate = {share} is a fraction of device memory, and {} has none of its \
             own: it would take that share of the machine's RAM from every other process; give a \
             size such as \"256MiB\" (policy = \"preallocate\" without a size means 0.75)",
            config.device.backend
        ))),
        None => Ok(()),
    }
}

fn memory_config_error(message: &str) -> Error {
    Error::Config(ConfigError {
        origin: "[memory]".into(),
        key: None,
        message: message.to_string(),
    })
}

pub(super) fn device_error(e: burn::tensor::ExecutionError) -> Error {
    Error::device(e)
}

/// `<output_dir>/<name>`, or `<name>-2`, `-3`, ... if that exists: a run never writes over
/// another run's files.
fn create_run_dir(output_dir: &Path, name: &str) -> Result<PathBuf, Error> {
    std::fs::create_dir_all(output_dir).map_err(|e| Error::io(output_dir, e))?;
    for n in 1.. {
        let dir = match n {
            1 => output_dir.join(name),
            n => output_dir.join(format!("{name}-{n}")),
        };
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io(&dir, e)),
        }
    }
    unreachable!("the loop returns")
}

/// How often, at most, a step's loss is read for progress and the divergence check.
const REPORT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// One run in progress: the loop is in this file, the memory side in `hooks.rs`.
pub(super) struct Run<'a> {
    pub(super) config: &'a RunConfig,
    pub(super) observer: &'a mut dyn Observer,
    pub(super) writer: SnapshotWriter,
    pub(super) executor: Executor,
    pub(super) probe: MemoryProbe,
    pub(super) policies: Policies,
    pub(super) checkpointer: Checkpointer,
    pub(super) baseline: MemoryUsage,
    pub(super) rss_before: u64,
    /// Each loader batch is split into this many micro-batches (doubled by `shrink`).
    pub(super) factor: usize,
    /// The breached attempt before a shrink, while the step is retried.
    pub(super) previous_attempt: Option<Attempt>,
    /// Bytes in use after each epoch, for the growth alarm.
    pub(super) epoch_in_use: Vec<u64>,
    pub(super) started: Instant,
    pub(super) summary: RunSummary,
}

/// A step that the limit stopped before the optimizer update.
pub(super) enum Breach {
    Shrink { observed: u64 },
    Fail(LimitExceeded),
}

/// Totals of one validation pass.
struct Evaluation {
    loss: f64,
    accuracy: f64,
}

impl Run<'_> {
    pub(super) fn micro_batch(&self) -> usize {
        self.config.train.batch_size.div_ceil(self.factor)
    }

    pub(super) fn state(&self, epoch: usize, step: usize, resting_estimate: u64) -> RunState {
        RunState {
            epoch,
            step,
            micro_batch: self.micro_batch(),
            accumulation_steps: self.config.train.accumulation_steps * self.factor,
            resting_estimate,
            previous_attempt: self.previous_attempt,
        }
    }

    fn train(&mut self, device: &Device, dataset: data::Dataset) -> Result<(), Error> {
        let config = self.config;
        let train_cfg = &config.train;
        let ad_device = match train_cfg.gradient_checkpointing {
            true => device.clone().autodiff().gradient_checkpointing(),
            false => device.clone().autodiff(),
        };
        ad_device.seed(config.run.seed);

        self.probe.reset_peak();
        let train_loader = data::loader(
            dataset.train,
            train_cfg.batch_size,
            Some(config.run.seed),
            config.data.num_workers,
            &ad_device,
        );
        let valid_loader = data::loader(
            dataset.valid,
            train_cfg.batch_size,
            None,
            config.data.num_workers,
            device,
        );
        let mut model = Model::new(&config.model, dataset.features, dataset.classes, &ad_device);
        model.initialize();
        let mut optimizer = build_optimizer(train_cfg);
        let mut precision = MixedPrecision::from_config(train_cfg);
        let loss_fn = CrossEntropyLossConfig::new().init(&ad_device);
        let valid_loss_fn = CrossEntropyLossConfig::new().init(device);

        // Before the first step: reserve, and check that the resting footprint fits.
        let usage = self.read_memory()?;
        let param_bytes = model.num_params() as u64 * 4;
        let grad_copies = if train_cfg.accumulation_steps > 1 {
            2
        } else {
            1
        };
        let optimizer_copies = match train_cfg.optimizer {
            OptimizerKind::Adam => 2,
            OptimizerKind::Sgd => 0,
        };
        let resting = usage.bytes_in_use + param_bytes * (grad_copies + optimizer_copies);
        let state = self.state(0, 0, resting);
        for action in self.policies.decide(Phase::RunStart, &usage, &state) {
            self.act(action, &state)?;
        }
        let usage = self.read_memory()?;
        self.snapshot(Event::RunStart, 0, usage, |_| {})?;
        self.checkpoint(0, &model, &optimizer)?;

        let micro_batches = self.summary.train_samples.div_ceil(train_cfg.batch_size);
        let steps_per_epoch = micro_batches.div_ceil(train_cfg.accumulation_steps);
        let mut last_report = Instant::now();
        let mut throughput = Vec::new();
        for epoch in 1..=train_cfg.epochs {
            self.probe.reset_peak();
            let epoch_start = Instant::now();
            let mut loss_sum: Option<Tensor<1>> = None;
            let mut samples = 0;
            let mut step_in_epoch = 0;
            let mut skipped = 0;
            let mut group = Vec::with_capacity(train_cfg.accumulation_steps);
            let mut batches = train_loader.iter();
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
                let step = self.summary.steps + 1;
                self.previous_attempt = None;
                // Retry the group with smaller micro-batches until it fits or the limit fails.
                let accumulated = loop {
                    let micro = split(&group, self.micro_batch());
                    let state = self.state(epoch, step, resting);
                    self.probe.begin_window();
                    let attempt =
                        accumulate_gradients(&model, &loss_fn, &micro, &precision, || {
                            self.check_step(&state)
                        });
                    match attempt {
                        Ok(acc) => break acc,
                        Err(Breach::Shrink { observed }) => self.shrink(&state, observed)?,
                        Err(Breach::Fail(e)) => return Err(self.fail(e)),
                    }
                };
                let mut grads = accumulated.grads;
                match precision
                    .finish_group(&mut grads, &model)
                    .map_err(device_error)?
                {
                    GroupOutcome::Apply => model = optimizer.step(train_cfg.lr, model, grads),
                    GroupOutcome::Skip => {
                        drop(grads);
                        skipped += 1;
                        self.summary.skipped_steps += 1;
                        let scaler = precision.scaler().expect("only loss scaling skips");
                        if scaler.consecutive_skips() >= MAX_CONSECUTIVE_SKIPS {
                            return Err(Error::LossScaleCollapsed {
                                epoch,
                                step,
                                skips: scaler.consecutive_skips(),
                                scale: scaler.scale(),
                            });
                        }
                    }
                }
                // The update allocates too (optimizer state on the first step).
                let state = self.state(epoch, step, resting);
                match self.check_step(&state) {
                    Ok(()) => {}
                    Err(Breach::Shrink { observed }) => self.shrink(&state, observed)?,
                    Err(Breach::Fail(e)) => return Err(self.fail(e)),
                }
                group.clear();
                samples += accumulated.samples;
                step_in_epoch += 1;
                self.summary.steps = step;
                let weighted = accumulated
                    .loss
                    .clone()
                    .mul_scalar(accumulated.samples as f64);
                loss_sum = Some(match loss_sum {
                    Some(sum) => sum + weighted,
                    None => weighted,
                });
                self.observer.step_done(epoch, step_in_epoch);
                if done || last_report.elapsed() >= REPORT_INTERVAL {
                    last_report = Instant::now();
                    // Reading the loss waits for the device and costs the step its overlap
                    // with the backend's threads: measured on W1 (flex), a read every third
                    // step made the median step 20-22 ms against 16 ms without; so read at
                    // most once per REPORT_INTERVAL, and at each epoch's end.
                    let loss = scalar(accumulated.loss)?;
                    self.observer.step(&EpochProgress {
                        epoch,
                        epochs: train_cfg.epochs,
                        step: step_in_epoch,
                        steps: steps_per_epoch,
                        loss,
                    });
                    if !loss.is_finite() {
                        return Err(Error::Diverged { epoch, step, loss });
                    }
                }
                if done {
                    break;
                }
            }
            let train_loss = match loss_sum {
                Some(sum) => scalar(sum)? / samples as f64,
                None => f64::NAN,
            };
            // The in-epoch check reads the loss about once a second; this one sees every step.
            if diverged(train_loss, samples) {
                return Err(Error::Diverged {
                    epoch,
                    step: self.summary.steps,
                    loss: train_loss,
                });
            }
            let train_secs = epoch_start.elapsed().as_secs_f64();
            // Validation in its own window, so that the limit is checked against what it
            // held (the epoch's peak also holds any attempt that shrank).
            self.probe.begin_window();
            let eval = evaluate(&model, valid_loader.as_ref(), &valid_loss_fn, &precision)?;
            let usage = self.read_memory()?;
            let validation = self.probe.observe();
            let sps = samples as f64 / train_secs.max(1e-9);
            throughput.push(sps);
            self.summary.epochs = epoch;
            self.summary.first_loss.get_or_insert(train_loss);
            self.summary.final_loss = Some(train_loss);
            self.summary.final_val_loss = Some(eval.loss);
            self.summary.final_val_accuracy = Some(eval.accuracy);
            self.summary.samples_per_sec =
                Some(throughput.iter().sum::<f64>() / throughput.len() as f64);
            self.snapshot(Event::Epoch, epoch, usage, |s| {
                s.loss = Some(train_loss);
                s.val_loss = Some(eval.loss);
                s.val_accuracy = Some(eval.accuracy);
                s.samples_per_sec = Some(sps);
                if let Some(scaler) = precision.scaler() {
                    s.loss_scale = Some(scaler.scale());
                    s.skipped_steps = Some(skipped);
                }
            })?;
            self.summary.loss_scale = precision.scaler().map(|s| s.scale());
            self.watch_growth(usage.bytes_in_use);
            self.checkpoint(epoch, &model, &optimizer)?;
            let state = self.state(epoch, self.summary.steps, resting);
            for action in self.policies.decide(Phase::EpochEnd, &validation, &state) {
                self.act(action, &state)?;
            }
        }
        Ok(())
    }
}

/// Whether an epoch's mean training loss shows a diverged run: not finite although steps ran.
fn diverged(train_loss: f64, samples: usize) -> bool {
    samples > 0 && !train_loss.is_finite()
}

/// Cuts each loader batch into micro-batches of at most `size` samples.
fn split(group: &[ClassificationBatch], size: usize) -> Vec<ClassificationBatch> {
    group
        .iter()
        .flat_map(|batch| {
            if batch.len() <= size {
                return vec![batch.clone()];
            }
            let inputs = batch.inputs.clone().split(size, 0);
            let targets = batch.targets.clone().split(size, 0);
            inputs
                .into_iter()
                .zip(targets)
                .map(|(inputs, targets)| ClassificationBatch { inputs, targets })
                .collect()
        })
        .collect()
}

/// Mean loss and accuracy of `model` (in inference mode) over `loader`.
fn evaluate(
    model: &Model,
    loader: &dyn DataLoader<ClassificationBatch>,
    loss_fn: &CrossEntropyLoss,
    precision: &MixedPrecision,
) -> Result<Evaluation, Error> {
    let model = model.valid();
    let mut loss_sum: Option<Tensor<1>> = None;
    let mut correct: Option<Tensor<1, burn::tensor::Int>> = None;
    let mut samples = 0;
    for batch in loader.iter() {
        let batch = batch.map_err(loader_error)?;
        let n = batch.len();
        let logits = precision.forward(&model, batch.inputs);
        let hits = logits
            .clone()
            .argmax(1)
            .reshape([n])
            .equal(batch.targets.clone())
            .int()
            .sum();
        let loss = loss_fn.forward(logits, batch.targets).mul_scalar(n as f64);
        loss_sum = Some(match loss_sum {
            Some(s) => s + loss,
            None => loss,
        });
        correct = Some(match correct {
            Some(c) => c + hits,
            None => hits,
        });
        samples += n;
    }
    let (Some(loss), Some(correct)) = (loss_sum, correct) else {
        return Err(Error::Data(data::DataError::Unusable(
            "the validation split is empty".into(),
        )));
    };
    let correct = correct
        .try_into_data()
        .map_err(device_error)?
        .convert::<i64>()
        .try_to_vec::<i64>()
        .map_err(|e| Error::Device(format!("{e:?}")))?[0];
    Ok(Evaluation {
        loss: scalar(loss)? / samples as f64,
        accuracy: correct as f64 / samples as f64,
    })
}

fn loader_error(e: burn::data::dataset::DatasetError) -> Error {
    Error::Data(data::DataError::Unusable(format!("data loader: {e}")))
}

/// Reads a one-element tensor. Reads are where a device reports earlier failures, an
/// out-of-memory among them.
fn scalar(tensor: Tensor<1>) -> Result<f64, Error> {
    let values = tensor
        .try_into_data()
        .map_err(device_error)?
        .convert::<f64>()
        .try_to_vec::<f64>()
        .map_err(|e| Error::Device(format!("{e:?}")))?;
    Ok(values[0])
}
