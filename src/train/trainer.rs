//! [`Trainer`]: a whole run from a [`RunConfig`] and a [`Task`], writing its run directory as it
//! goes.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::before_run::{check_before_run, notes};
use super::checkpoint::Checkpointer;
use super::epochs::Epochs;
use super::resume::{open_run, Resume};
use super::run_dir;
use super::stats::Identity;
use crate::backend;
use crate::config::RunConfig;
use crate::error::Error;
use crate::record::{write_atomic, Observer, Silent, Warning};
use crate::record::{RunStatus, RunSummary};
use crate::report::{draw_memory_svg, PictureOf};
use crate::task::Task;
use crate::train::gate::{Ending, EpochGate};
use crate::train::MemoryGuard;

/// Trains one run: any [`Task`] ([`fit`](Self::fit)), or the task a config's model kind
/// builds ([`run`](Self::run) for the built-in kinds, [`Kinds::train`](crate::kinds::Kinds::train)
/// for a program's).
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
    /// checkpoint as if the run had never stopped. A run that ends at that step anyway (its
    /// last epoch's last step, or where early stopping or a search's gate ends it) ends as it
    /// would have, with its summary.
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

    /// Counts `bytes` as the run's dataset (host bytes its kind counted while loading it).
    pub(crate) fn data_bytes(mut self, bytes: Option<u64>) -> Self {
        self.data_bytes = bytes;
        self
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
        check_before_run(&config, &device, &task)?;
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
        let checkpointer = Checkpointer::for_run(&run_dir, &config);
        let mut guard = prepared.open(&run_dir, layout, observer)?;
        // Every tensor of the run lives inside `train`, so all are dropped when it returns,
        // whether it succeeded or not; `run_end` then releases and verifies.
        let result = Epochs {
            config: &config,
            task: &task,
            device: &device,
            guard: &mut guard,
            stats: &mut stats,
            checkpointer: &checkpointer,
            resume: resume.as_ref().map(|r| &r.checkpoint),
            data_bytes,
            gate: gate.as_mut(),
            stop: stop.as_deref(),
        }
        .train();
        // The run's end is recorded (released, verified) whatever the epochs' outcome.
        let ended = guard.run_end(stats.epochs);
        let result = result.and_then(|ending| ended.map(|_| ending));
        draw(&mut guard, &config, &id.name);
        // Stopped on request: the run is left to be resumed, as a killed one would be.
        if let Err(Error::Interrupted) = result {
            return Err(Error::Interrupted);
        }
        let (status, stopped_by) = status_of(&result);
        let earlier_s = resume.as_ref().map_or(0.0, |r| r.elapsed_s);
        let wall_time_s = earlier_s + started.elapsed().as_secs_f64();
        let mut summary = stats.summary(id, &guard, status, wall_time_s);
        summary.stopped_by = stopped_by;
        summary.run_in_process = RUNS_IN_PROCESS.fetch_add(1, Ordering::Relaxed) + 1;
        write_summary(&run_dir, &summary)?;
        result.map(|_| summary)
    }
}

/// A run's status in its summary, and the pruner's reason where it stopped it.
fn status_of(result: &Result<Ending, Error>) -> (RunStatus, Option<String>) {
    match result {
        Ok(Ending::Completed) => (RunStatus::Completed, None),
        Ok(Ending::Paused) => (RunStatus::Paused, None),
        Ok(Ending::Pruned(reason)) => (RunStatus::Pruned, Some(reason.clone())),
        Err(e) => (RunStatus::Failed(e.to_string()), None),
    }
}

/// Writes `summary.json` in `run_dir`, whole or not at all.
fn write_summary(run_dir: &std::path::Path, summary: &RunSummary) -> Result<(), Error> {
    let path = run_dir.join("summary.json");
    let json = serde_json::to_vec_pretty(summary).expect("summaries serialise");
    crate::failpoint::pass("summary");
    write_atomic(&path, &json).map_err(|e| Error::io(&path, e))?;
    crate::failpoint::pass("summarised");
    Ok(())
}

/// Runs this process has finished, for each summary's `run_in_process`.
static RUNS_IN_PROCESS: AtomicUsize = AtomicUsize::new(0);
/// Draws `memory.svg` beside the run's `snapshots.jsonl`, from the snapshots on disk. A picture
/// that cannot be drawn is a warning, not an error: the snapshots it comes from are intact,
/// and `tidemark report RUN_DIR` can draw it again.
pub(super) fn draw(guard: &mut MemoryGuard, config: &RunConfig, title: &str) {
    let of = PictureOf {
        title,
        limit: guard.limit_bytes(),
        monitor: config
            .train
            .early_stopping
            .as_ref()
            .map(|e| e.monitor.as_str()),
    };
    if let Err(e) = draw_memory_svg(guard.recorder().snapshots_path(), of) {
        let (path, cause) = (e.path, e.cause);
        guard
            .recorder_mut()
            .warn(&Warning::PictureNotDrawn { path, cause });
    }
}
