//! [`Trainer`]: a whole run from a [`RunConfig`] and a [`Task`], writing its run directory as it
//! goes.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::checkpoint::Checkpointer;
use super::epochs::{steps_per_epoch, Epochs};
use super::precision;
use super::resume::{open_run, Resume};
use super::run_dir;
use super::stats::Identity;
use crate::backend;
use crate::builtin::{self, Visit};
use crate::config::{
    Backend, ConfigError, EarlyStoppingConfig, Execution, LossScaling, Precision, RunConfig,
    TrainConfig,
};
use crate::error::Error;
use crate::memory::HostCounters;
use crate::model::Network;
use crate::record::{write_atomic, Observer, Silent, Warning};
use crate::record::{RunStatus, RunSummary};
use crate::report::{draw_memory_svg, PictureOf};
use crate::task::{unknown_monitor, Classify, Regress, Task};
use crate::train::gate::{Ending, EpochGate};
use crate::train::{MemoryGuard, RunRecorder};

/// Trains one run: the built-in task a config describes ([`run`](Self::run)), or any
/// [`Task`] ([`fit`](Self::fit)).
///
/// ```no_run
/// let config = tidemark::config::ConfigBuilder::new("demo").build()?;
/// let summary = tidemark::Trainer::new(config).run()?;
/// println!("accuracy {:?}", summary.metric("val_accuracy"));
/// # Ok::<(), tidemark::Error>(())
/// ```
pub struct Trainer {
    config: RunConfig,
    observer: Box<dyn Observer>,
    resume: Option<PathBuf>,
    /// The built-in task's dataset bytes, counted by the allocator as it loaded.
    data_bytes: Option<u64>,
    /// A search's pruner, asked after each epoch.
    gate: Option<EpochGate>,
    /// Set (by a signal handler) to stop the run at its next step.
    stop: Option<Arc<AtomicBool>>,
}

impl Trainer {
    /// A trainer for `config` that reports nothing while it runs.
    pub fn new(config: RunConfig) -> Self {
        Self {
            config,
            observer: Box::new(Silent),
            resume: None,
            data_bytes: None,
            gate: None,
            stop: None,
        }
    }

    /// Continues the run in `run_dir` from its latest checkpoint instead of starting a new
    /// one: the weights, the optimizer and loss-scaler state, the micro-batch a limit left,
    /// the counters and the data order are restored, so that the run goes on as if it had
    /// never stopped (exactly, on one device with `data.num_workers = 0`). Snapshots are
    /// appended after a `resume` event; `summary.json` is rewritten at the end.
    ///
    /// The config must match the run's `config.toml` except in `run.name`, `run.output_dir`,
    /// `train.epochs`, `train.gradient_checkpointing`, `data.num_workers`, `device.index` and
    /// the `[memory]` and `[checkpoint]` keys; anything else is refused, naming the key.
    pub fn resume(mut self, run_dir: impl Into<PathBuf>) -> Self {
        self.resume = Some(run_dir.into());
        self
    }

    /// Asks `gate` after each epoch but the last whether the run goes on: a search's pruner.
    /// A run it pauses or prunes stops after that epoch's checkpoint, with status `paused` or
    /// `pruned` in its summary (and `stopped_by`, the pruner's reason); a paused run resumes
    /// from there as any other.
    pub fn gate(mut self, gate: EpochGate) -> Self {
        self.gate = Some(gate);
        self
    }

    /// Stops the run once `flag` is set (by a signal handler, say): at the end of the step in
    /// progress it writes a checkpoint there (at an epoch's last step, the epoch's own) and
    /// returns [`Error::Interrupted`]. The run directory is left as a killed run's, with no
    /// `summary.json` from this process, and [`resume`](Self::resume) goes on from that
    /// checkpoint as if the run had never stopped.
    pub fn stop_when(mut self, flag: Arc<AtomicBool>) -> Self {
        self.stop = Some(flag);
        self
    }

    /// Reports progress to `observer`.
    pub fn observer(mut self, observer: impl Observer + 'static) -> Self {
        self.observer = Box::new(observer);
        self
    }

    /// The configuration this trainer runs.
    pub fn config(&self) -> &RunConfig {
        &self.config
    }

    /// Trains the model `[model]` describes on the data `[data]` describes.
    pub fn run(mut self) -> Result<RunSummary, Error> {
        let before = HostCounters::read();
        let loaded = builtin::load(&self.config)?;
        let after = HostCounters::read();
        // Counted only with tidemark's allocator installed (the CLI's), and only on this
        // thread's watch: another run loading at the same time would be counted too.
        self.data_bytes = after
            .installed
            .then(|| after.in_use.saturating_sub(before.in_use));
        let config = self.config.clone();
        builtin::visit(&config, loaded, self)
    }

    /// Trains `task` under this trainer's `[run]`, `[device]`, `[train]` and `[memory]`
    /// settings, and returns the summary, also written to `summary.json`.
    ///
    /// Errors before the run directory exists (bad device, unusable memory settings) leave
    /// nothing on disk. After it, every snapshot written so far stays, the latest checkpoint
    /// stays, a `run_end` event records what the run kept after releasing its memory, and
    /// `summary.json` has status `failed` with the error.
    pub fn fit<T: Task>(self, task: T) -> Result<RunSummary, Error> {
        let started = Instant::now();
        let Trainer {
            config,
            mut observer,
            resume,
            data_bytes,
            mut gate,
            stop,
        } = self;
        let resume = match resume {
            Some(dir) => Some(Resume::open(&dir, &config, task.config_sections())?),
            None => None,
        };
        let device = backend::select(&config.device)?;
        let execution = backend::execution(&config.device)?;
        let precision = config.train.precision;
        check_precision(&config, &device, &task)?;
        if let Some(early) = &config.train.early_stopping {
            check_monitor(early, task.metric_names())?;
        }
        check_warmup(&config.train, &task)?;
        let (prepared, run_dir, layout) = open_run(&config, &device, resume.as_ref())?;
        observer.message(&format!("run directory: {}", run_dir.display()));
        for note in notes(&config).into_iter().chain(task.notes()) {
            observer.message(&note);
        }
        run_dir::write_config(&run_dir, &config, &task)?;
        // The run's records first: the guard takes its baseline after them.
        let id = Identity {
            name: config.run.name.clone(),
            run_dir: run_dir.clone(),
            task: task.name(),
            backend: config.device.backend,
            execution,
            precision,
            baselines: task.baselines(),
        };
        let mut stats = resume.as_ref().map(Resume::stats).unwrap_or_default();
        let checkpointer = Checkpointer::new(&run_dir);
        let (mut guard, mut recorder) = prepared.open(&run_dir, layout, observer)?;
        // Every tensor of the run lives inside `train`, so all are dropped when it returns,
        // whether it succeeded or not; `run_end` then releases and verifies.
        let result = Epochs {
            config: &config,
            task: &task,
            device: &device,
            guard: &mut guard,
            recorder: &mut recorder,
            stats: &mut stats,
            checkpointer: &checkpointer,
            resume: resume.as_ref().map(|r| &r.checkpoint),
            data_bytes,
            gate: gate.as_mut(),
            stop: stop.as_deref(),
        }
        .train();
        // The run's end is recorded (released, verified) whatever the epochs' outcome.
        let ended = guard.run_end(&mut recorder, stats.epochs);
        let result = result.and_then(|ending| ended.map(|_| ending));
        draw((&guard, &mut recorder), &config, &id.name);
        // Stopped on request: the run is left to be resumed, as a killed one would be.
        if let Err(Error::Interrupted) = result {
            return Err(Error::Interrupted);
        }
        let (status, stopped_by) = match &result {
            Ok(Ending::Completed) => (RunStatus::Completed, None),
            Ok(Ending::Paused) => (RunStatus::Paused, None),
            Ok(Ending::Pruned(reason)) => (RunStatus::Pruned, Some(reason.clone())),
            Err(e) => (RunStatus::Failed(e.to_string()), None),
        };
        let earlier_s = resume.as_ref().map_or(0.0, |r| r.elapsed_s);
        let wall_time_s = earlier_s + started.elapsed().as_secs_f64();
        let mut summary = stats.summary(id, (&guard, &recorder), status, wall_time_s);
        summary.stopped_by = stopped_by;
        summary.run_in_process = RUNS_IN_PROCESS.fetch_add(1, Ordering::Relaxed) + 1;
        let path = run_dir.join("summary.json");
        let json = serde_json::to_vec_pretty(&summary).expect("summaries serialise");
        crate::failpoint::pass("summary");
        write_atomic(&path, &json).map_err(|e| Error::io(&path, e))?;
        crate::failpoint::pass("summarised");
        result.map(|_| summary)
    }
}

/// Runs this process has finished, for each summary's `run_in_process`.
static RUNS_IN_PROCESS: AtomicUsize = AtomicUsize::new(0);
/// A built-in task is trained like any other.
impl Visit for Trainer {
    type Output = RunSummary;

    fn classify<N: Network>(self, task: Classify<N>) -> Result<RunSummary, Error> {
        self.fit(task)
    }

    fn regress<N: Network>(self, task: Regress<N>) -> Result<RunSummary, Error> {
        self.fit(task)
    }
}

/// Lines about how this run computes, for the terminal.
fn notes(config: &RunConfig) -> Vec<String> {
    let mut notes = Vec::new();
    if config.device.backend == Backend::Flex {
        notes.push(
            "memory: flex has no device pools; figures are host heap bytes counted by \
             tidemark's allocator (reserved = the process's anonymous resident memory)"
                .to_string(),
        );
        if config.device.execution == Some(Execution::Fused) {
            notes.push(
                "execution: flex has no fused mode (kernel fusion exists for the CubeCL \
                 backends); this run executes eagerly, as \"eager\" would"
                    .to_string(),
            );
        }
    }
    let train = &config.train;
    if train.precision != Precision::F32 {
        notes.push(format!(
            "precision: {} compute, f32 weights and optimizer state{}",
            train.precision,
            match train.loss_scaling {
                LossScaling::Dynamic => {
                    format!(", dynamic loss scaling from {}", train.initial_loss_scale)
                }
                LossScaling::Off => String::new(),
            }
        ));
    }
    notes
}

/// Refuses a `train.precision` that `device` does not have, or that `task`'s model cannot
/// compute in, before anything runs.
pub(super) fn check_precision<T: Task>(
    config: &RunConfig,
    device: &burn::tensor::Device,
    task: &T,
) -> Result<(), Error> {
    let precision = config.train.precision;
    if !precision::supported(device, precision) {
        return Err(unsupported_precision(config, device));
    }
    match task.half_precision_unsupported() {
        Some(why) if precision != Precision::F32 => Err(Error::Config(ConfigError {
            origin: "[train]".into(),
            key: Some("train.precision".into()),
            message: format!(
                "train.precision = \"{precision}\" is not supported by this task's model: \
                 {why}; use \"f32\""
            ),
        })),
        _ => Ok(()),
    }
}

/// Refuses a monitor the task does not report, before the run directory
/// exists, where the task says what it reports; otherwise the first epoch's figures are the check.
fn check_monitor(
    early: &EarlyStoppingConfig,
    metrics: Option<&'static [&'static str]>,
) -> Result<(), Error> {
    let Some(metrics) = metrics else {
        return Ok(());
    };
    let reported = crate::config::Monitor::figures(metrics);
    if reported.contains(&early.monitor) {
        return Ok(());
    }
    let key = "train.early_stopping.monitor";
    Err(Error::Config(ConfigError {
        origin: "[train.early_stopping]".into(),
        key: Some(key.into()),
        message: unknown_monitor(key, &early.monitor, &reported),
    }))
}

/// Refuses a warmup longer than the run: it would train every step below the configured rate
/// (10,000 steps of warmup on a run of 45 train it all at about `lr / 2000`), without a word.
/// Before the run directory exists.
fn check_warmup<T: Task>(train: &TrainConfig, task: &T) -> Result<(), Error> {
    let Some(schedule) = train.schedule.as_ref().filter(|s| s.warmup_steps > 0) else {
        return Ok(());
    };
    // The run's length needs the training split's; only a schedule with a warmup asks.
    let total_steps = steps_per_epoch(train, task.data().train.len()) * train.epochs;
    if schedule.warmup_steps <= total_steps {
        return Ok(());
    }
    Err(Error::Config(ConfigError {
        origin: "[train.schedule]".into(),
        key: Some("train.schedule.warmup_steps".into()),
        message: format!(
            "train.schedule.warmup_steps = {} is longer than the run, {total_steps} optimizer \
             steps (train.epochs times the steps of an epoch): the rate would never reach \
             train.lr; use at most {total_steps}",
            schedule.warmup_steps
        ),
    }))
}

fn unsupported_precision(config: &RunConfig, device: &burn::tensor::Device) -> Error {
    let precision = config.train.precision;
    Error::Config(ConfigError {
        origin: "[train]".into(),
        key: Some("train.precision".into()),
        message: format!(
            "train.precision = \"{precision}\" is not supported by the {} device; use \
             \"f32\"{}",
            config.device.backend,
            [Precision::Bf16, Precision::F16]
                .into_iter()
                .filter(|&p| p != precision && precision::supported(device, p))
                .map(|p| format!(" or \"{p}\""))
                .collect::<String>()
        ),
    })
}

/// Draws `memory.svg` beside the run's `snapshots.jsonl`, from the snapshots on disk. A picture
/// that cannot be drawn is a warning, not an error: the snapshots it comes from are intact,
/// and `tidemark report RUN_DIR` can draw it again.
pub(super) fn draw(
    (guard, recorder): (&MemoryGuard, &mut RunRecorder),
    config: &RunConfig,
    title: &str,
) {
    let of = PictureOf {
        title,
        limit: guard.limit_bytes(),
        monitor: config
            .train
            .early_stopping
            .as_ref()
            .map(|e| e.monitor.as_str()),
    };
    if let Err(e) = draw_memory_svg(recorder.snapshots_path(), of) {
        let (path, cause) = (e.path, e.cause);
        recorder.warn(&Warning::PictureNotDrawn { path, cause });
    }
}
