//! [`Trainer`]: a whole run from a [`RunConfig`], writing its run directory as it goes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use burn::data::dataloader::{DataLoader, DataLoaderBuilder};
use burn::data::dataset::InMemDataset;
use burn::module::Module;
use burn::nn::loss::{CrossEntropyLoss, CrossEntropyLossConfig};
use burn::tensor::{Device, Tensor};

use super::observer::{EpochProgress, Observer, Silent};
use super::step::{accumulated_step, build_optimizer};
use crate::backend;
use crate::config::{to_toml, RunConfig};
use crate::data::{self, ClassificationBatch, ClassificationBatcher, Sample};
use crate::error::Error;
use crate::memory::{MemoryProbe, MemoryUsage};
use crate::model::Model;
use crate::report::{write_atomic, Event, RunStatus, RunSummary, Snapshot, SnapshotWriter};

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
    /// Errors before the run directory exists (bad device, unreadable data) leave nothing on
    /// disk. Errors after it leave every snapshot written so far and a `summary.json` whose
    /// status is `failed`.
    pub fn run(mut self) -> Result<RunSummary, Error> {
        let started = Instant::now();
        let device = backend::select(&self.config.device)?;
        let dataset = data::load(&self.config.data, self.config.run.seed)?;
        let run_dir = create_run_dir(&self.config.run.output_dir, &self.config.run.name)?;
        self.observer
            .message(&format!("run directory: {}", run_dir.display()));
        write_atomic(
            &run_dir.join("config.toml"),
            to_toml(&self.config).as_bytes(),
        )
        .map_err(|e| Error::io(run_dir.join("config.toml"), e))?;
        let snapshots = run_dir.join("snapshots.jsonl");
        let probe = MemoryProbe::new(&device);
        let memory_source = probe.source();
        let mut run = Run {
            config: &self.config,
            observer: self.observer.as_mut(),
            writer: SnapshotWriter::open(&snapshots).map_err(|e| Error::io(&snapshots, e))?,
            probe,
            started,
            summary: RunSummary {
                name: self.config.run.name.clone(),
                run_dir: run_dir.clone(),
                status: RunStatus::Completed,
                backend: self.config.device.backend.to_string(),
                memory_source,
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
                wall_time_s: 0.0,
            },
        };
        let result = run.train(&device, dataset);
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

struct Run<'a> {
    config: &'a RunConfig,
    observer: &'a mut dyn Observer,
    writer: SnapshotWriter,
    probe: MemoryProbe,
    started: Instant,
    summary: RunSummary,
}

/// Totals of one validation pass.
struct Evaluation {
    loss: f64,
    accuracy: f64,
}

impl Run<'_> {
    fn train(&mut self, device: &Device, dataset: data::Dataset) -> Result<(), Error> {
        let config = self.config;
        let train_cfg = &config.train;
        let ad_device = device.clone().autodiff();
        ad_device.seed(config.run.seed);

        self.probe.reset_peak();
        let train_loader = loader(
            dataset.train,
            train_cfg.batch_size,
            Some(config.run.seed),
            config.data.num_workers,
            &ad_device,
        );
        let valid_loader = loader(
            dataset.valid,
            train_cfg.batch_size,
            None,
            config.data.num_workers,
            device,
        );
        let mut model = Model::new(&config.model, dataset.features, dataset.classes, &ad_device);
        model.initialize();
        let mut optimizer = build_optimizer(train_cfg);
        let loss_fn = CrossEntropyLossConfig::new().init(&ad_device);
        let valid_loss_fn = CrossEntropyLossConfig::new().init(device);
        let usage = self.read_memory()?;
        self.snapshot(Event::RunStart, 0, None, None, usage)?;

        let micro_batches = self.summary.train_samples.div_ceil(train_cfg.batch_size);
        let steps_per_epoch = micro_batches.div_ceil(train_cfg.accumulation_steps);
        let report_every = steps_per_epoch.div_ceil(10).max(1);
        let mut throughput = Vec::new();
        for epoch in 1..=train_cfg.epochs {
            self.probe.reset_peak();
            let epoch_start = Instant::now();
            let mut loss_sum: Option<Tensor<1>> = None;
            let mut samples = 0;
            let mut step_in_epoch = 0;
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
                let out = accumulated_step(
                    model,
                    &mut optimizer,
                    train_cfg.lr,
                    &loss_fn,
                    &group,
                    &mut self.probe,
                );
                group.clear();
                model = out.model;
                samples += out.samples;
                step_in_epoch += 1;
                self.summary.steps += 1;
                let weighted = out.loss.clone().mul_scalar(out.samples as f64);
                loss_sum = Some(match loss_sum {
                    Some(sum) => sum + weighted,
                    None => weighted,
                });
                if step_in_epoch % report_every == 0 || done {
                    // Reading the loss waits for the device; do it about ten times an epoch.
                    let loss = scalar(out.loss)?;
                    self.observer.step(&EpochProgress {
                        epoch,
                        epochs: train_cfg.epochs,
                        step: step_in_epoch,
                        steps: steps_per_epoch,
                        loss,
                    });
                    if !loss.is_finite() {
                        return Err(Error::Diverged {
                            epoch,
                            step: self.summary.steps,
                            loss,
                        });
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
            let train_secs = epoch_start.elapsed().as_secs_f64();
            let eval = evaluate(&model, valid_loader.as_ref(), &valid_loss_fn)?;
            let usage = self.read_memory()?;
            let sps = samples as f64 / train_secs.max(1e-9);
            throughput.push(sps);
            self.summary.epochs = epoch;
            self.summary.first_loss.get_or_insert(train_loss);
            self.summary.final_loss = Some(train_loss);
            self.summary.final_val_loss = Some(eval.loss);
            self.summary.final_val_accuracy = Some(eval.accuracy);
            self.summary.samples_per_sec =
                Some(throughput.iter().sum::<f64>() / throughput.len() as f64);
            self.snapshot(
                Event::Epoch,
                epoch,
                Some(train_loss),
                Some((eval, sps)),
                usage,
            )?;
        }
        drop((
            model,
            optimizer,
            loss_fn,
            valid_loss_fn,
            train_loader,
            valid_loader,
        ));
        let mut usage = self.read_memory()?;
        usage.peak_bytes_in_use = self.summary.peak_bytes_in_use.max(usage.peak_bytes_in_use);
        self.snapshot(Event::RunEnd, self.summary.epochs, None, None, usage)
    }

    fn read_memory(&mut self) -> Result<MemoryUsage, Error> {
        self.probe
            .read()
            .map_err(|e| Error::Device(format!("{e:?}")))
    }

    fn snapshot(
        &mut self,
        event: Event,
        epoch: usize,
        loss: Option<f64>,
        eval: Option<(Evaluation, f64)>,
        memory: MemoryUsage,
    ) -> Result<(), Error> {
        self.summary.peak_bytes_in_use =
            self.summary.peak_bytes_in_use.max(memory.peak_bytes_in_use);
        self.summary.peak_bytes_reserved =
            self.summary.peak_bytes_reserved.max(memory.bytes_reserved);
        let (val_loss, val_accuracy, samples_per_sec) = match eval {
            Some((e, sps)) => (Some(e.loss), Some(e.accuracy), Some(sps)),
            None => (None, None, None),
        };
        let snapshot = Snapshot {
            event,
            epoch,
            step: self.summary.steps,
            loss,
            val_loss,
            val_accuracy,
            samples_per_sec,
            memory,
            elapsed_s: self.started.elapsed().as_secs_f64(),
        };
        self.writer
            .append(&snapshot)
            .map_err(|e| Error::io(self.writer.path(), e))?;
        self.observer.snapshot(&snapshot);
        Ok(())
    }
}

fn loader(
    samples: Vec<Sample>,
    batch_size: usize,
    shuffle: Option<u64>,
    workers: usize,
    device: &Device,
) -> Arc<dyn DataLoader<ClassificationBatch>> {
    let mut builder = DataLoaderBuilder::new(ClassificationBatcher)
        .batch_size(batch_size)
        .num_workers(workers)
        .set_device(device.clone());
    if let Some(seed) = shuffle {
        builder = builder.shuffle(seed);
    }
    builder.build(InMemDataset::new(samples))
}

/// Mean loss and accuracy of `model` (in inference mode) over `loader`.
fn evaluate(
    model: &Model,
    loader: &dyn DataLoader<ClassificationBatch>,
    loss_fn: &CrossEntropyLoss,
) -> Result<Evaluation, Error> {
    let model = model.valid();
    let mut loss_sum: Option<Tensor<1>> = None;
    let mut correct: Option<Tensor<1, burn::tensor::Int>> = None;
    let mut samples = 0;
    for batch in loader.iter() {
        let batch = batch.map_err(loader_error)?;
        let n = batch.len();
        let logits = model.forward(batch.inputs);
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
        .into_data()
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

/// Reads a one-element tensor.
fn scalar(tensor: Tensor<1>) -> Result<f64, Error> {
    let values = tensor
        .into_data()
        .convert::<f64>()
        .try_to_vec::<f64>()
        .map_err(|e| Error::Device(format!("{e:?}")))?;
    Ok(values[0])
}
