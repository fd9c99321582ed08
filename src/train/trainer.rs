//! [`Trainer`]: a whole run from a [`RunConfig`] and a [`Task`], writing its run directory as it
//! goes.

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::before_run::{check_before_run, notes};
use super::epochs::Epochs;
use super::hand::{empty_training_split, DataBytes, HandLoop, Opening};
use super::resume::{ResolveModel, Resume};
use crate::backend;
use crate::config::{ConfigBuilder, ConfigError, EarlyStoppingConfig, RunConfig};
use crate::data::item_loader;
use crate::error::{Error, TrainingError};
use crate::record::{Observer, RunSummary, Silent};
use crate::task::Task;
use crate::train::gate::EpochGate;
use crate::train::lr_find::{find, rule::Sweep, FinderRun};

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
    stop: Vec<Arc<AtomicBool>>,
    /// The config's kind's reading of `[model]`, applied to a resumed run's own `config.toml`
    /// before it is compared (set by [`Kinds::train`](crate::kinds::Kinds::train)).
    resolve_model: Option<ModelResolver>,
    /// A resume may change the keys of [`MAY_RETUNE`](crate::train::MAY_RETUNE).
    retune: bool,
    /// Holds the run directory's lock ([`exclusive`](Self::exclusive)).
    exclusive: bool,
}

/// A kind's reading of `[model]`, kept by a trainer.
pub(crate) type ModelResolver = Arc<
    dyn Fn(&mut crate::config::ModelConfig) -> Result<(), crate::config::Invalid> + Send + Sync,
>;

impl Trainer {
    /// A trainer for `config` that reports nothing while it runs.
    pub fn new(config: RunConfig) -> Self {
        Self {
            config,
            observer: Box::new(Silent),
            resume: None,
            data_bytes: None,
            gate: None,
            stop: Vec::new(),
            resolve_model: None,
            retune: false,
            exclusive: false,
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

    /// On a [`resume`](Self::resume): the keys that set how the optimizer steps may differ
    /// from the run's own too ([`MAY_RETUNE`](crate::train::MAY_RETUNE): `train.lr`,
    /// `train.weight_decay`, ...). The run goes on from its checkpoint with the new values from
    /// its next step (a schedule from its position, at the new rate); its `config.toml` then
    /// holds them, and its `resume` snapshot names each key changed, old and new. Population
    /// based training's explore is such a resume, from a checkpoint another run's copied in
    /// ([`Checkpoint::copy_into`](crate::train::Checkpoint::copy_into)). `train.lr = "find"`
    /// is refused on a retuned resume: the finder's rate is one to start a run at.
    pub fn retune(mut self) -> Self {
        self.retune = true;
        self
    }

    /// Holds the run directory's lock (`flock` on the directory) while the run trains, and
    /// refuses a directory another process holds: two processes training one run, a second
    /// [`resume`](Self::resume) beside the first, would overwrite each other's checkpoints.
    /// `tidemark train` asks for it. A search's trials do not: the search keeps them apart (a
    /// trial's launch lock, a study's owner of each trial), and a worker of a study may take
    /// over the trial of one that went silent, which may still hold its directory.
    pub fn exclusive(mut self) -> Self {
        self.exclusive = true;
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
    /// would have, with its summary. Given several flags, it stops at the first set. Under
    /// `train.lr = "find"`, a stop during the finder ends the finder's copy and the run is not
    /// begun: [`Error::Interrupted`], with no run directory.
    pub fn stop_when(mut self, flag: Arc<AtomicBool>) -> Self {
        self.stop.push(flag);
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

    /// The config, for its kind to resolve its model's keys before the run.
    pub(crate) fn config_mut(&mut self) -> &mut RunConfig {
        &mut self.config
    }

    /// Reads a resumed run's own `[model]` with `resolve` (its kind's) before comparing it.
    pub(crate) fn resolving_model(mut self, resolve: ModelResolver) -> Self {
        self.resolve_model = Some(resolve);
        self
    }

    /// Counts `bytes` as the run's dataset (host bytes its kind counted while loading it).
    pub(crate) fn data_bytes(mut self, bytes: Option<u64>) -> Self {
        self.data_bytes = bytes;
        self
    }

    /// Trains `task` under this trainer's `[run]`, `[device]`, `[train]` and `[memory]`
    /// settings, and returns the summary, also written to `summary.json`.
    ///
    /// With `train.lr = "find"`, the learning-rate finder runs on a copy of the run first, and
    /// the run trains at its suggestion (a resume, at the rate its `config.toml` recorded).
    /// The run is a [`HandLoop`] driven over the task's loaders (docs/library.md, "A task's
    /// loop by hand").
    ///
    /// Errors before the run directory exists (bad device, unusable memory settings, a task
    /// with no training items, early stopping without a validation split) leave nothing on
    /// disk. After it, every snapshot written so far stays, the latest checkpoint stays, a
    /// `run_end` event records what the run kept after releasing its memory, and
    /// `summary.json` has status `failed` with the error.
    pub fn fit<T: Task>(self, task: T) -> Result<RunSummary, Error> {
        self.fit_on(&task)
    }

    /// [`fit`](Self::fit), on a task it borrows: the finder's copy of the run trains the same.
    fn fit_on<T: Task>(mut self, task: &T) -> Result<RunSummary, Error> {
        if self.config.train.find_lr {
            self = match self.resume.clone() {
                Some(run_dir) => self.at_rate_of(&run_dir)?,
                None => self.at_found_rate(|copy| copy.fit_on(task))?,
            };
        }
        // The run's wall time: from here, the finder's copy (a run of its own) aside.
        let started = Instant::now();
        let Trainer {
            config,
            observer,
            resume,
            data_bytes,
            gate,
            stop,
            resolve_model,
            retune,
            exclusive,
        } = self;
        // The lock before the run is read: a resume beside another process's run would read
        // checkpoints that process is writing and deleting.
        let locked = match (&resume, exclusive) {
            (Some(dir), true) if dir.is_dir() => Some(super::run_dir::lock(dir)?),
            _ => None,
        };
        let resume = match resume {
            Some(dir) => {
                let resolve = resolve_model.as_deref().map(|r| r as ResolveModel<'_>);
                Some(Resume::open(
                    &dir,
                    &config,
                    task.config_sections(),
                    resolve,
                    retune,
                )?)
            }
            None => None,
        };
        let device = backend::select(&config.device)?;
        check_before_run(&config, &device, task)?;
        // The data before the run directory: a task with nothing to train on makes none.
        let train = &config.train;
        let splits = task.data();
        let samples = splits.train.len();
        if samples == 0 {
            return Err(empty_training_split());
        }
        if let (Some(early), None) = (&train.early_stopping, &splits.valid) {
            return Err(needs_validation(early));
        }
        let valid_samples = splits.valid.as_ref().map_or(0, |v| v.len());
        drop(splits);
        let probe = |config: &RunConfig| Ok(super::preflight::probe_task(task, config)?.measured());
        let opening = Opening {
            task: task.name(),
            owned: task.config_sections(),
            baselines: task.baselines(),
            samples,
            valid_samples,
            data: DataBytes::Counted(data_bytes),
            notes: notes(&config).into_iter().chain(task.notes()).collect(),
            started,
            probe: Some(&probe),
            exclusive,
            locked,
        };
        let mut run = HandLoop::open(config, opening, |d| task.model(d), observer, resume)?;
        for stop in stop {
            run.stop_when(stop);
        }
        // The loaders after the run's baseline: what they hold is the run's, given back at
        // its end.
        let (train, splits) = (&run.config.train, task.data());
        let (workers, seed) = (run.config.data.num_workers, run.config.run.seed);
        let train_loader = item_loader(splits.train, train.batch_size, Some(seed), workers);
        let valid_loader = (splits.valid).map(|v| item_loader(v, train.batch_size, None, workers));
        Epochs {
            task,
            run,
            train_loader,
            valid_loader,
            gate,
        }
        .train()
    }
}

/// The learning-rate finder's copy of a run, trained as a run is: its config, its observer,
/// and the finder's stop.
impl From<FinderRun> for Trainer {
    fn from(run: FinderRun) -> Self {
        Trainer::new(run.config)
            .observer(run.observer)
            .stop_when(run.stop)
    }
}

impl Trainer {
    /// `train.lr = "find"`: the learning-rate finder on a copy of the run, trained by `train`
    /// (its progress told to this trainer's observer), and this trainer at the rate it
    /// suggests, told in a line; an error where it suggests none.
    fn at_found_rate(
        mut self,
        train: impl FnOnce(Trainer) -> Result<RunSummary, Error>,
    ) -> Result<Trainer, Error> {
        let observer = std::mem::replace(&mut self.observer, Box::new(Silent));
        let shared = Rc::new(RefCell::new(observer));
        let watching = Box::new(Shared(Rc::clone(&shared)));
        // The finder's copy stops where this run would: a stop asked during the finder ends it,
        // before the run begins.
        let flags = self.stop.clone();
        let watched = |run: FinderRun| {
            let copy = Trainer::from(run);
            train(flags.into_iter().fold(copy, Trainer::stop_when))
        };
        let found = find(&self.config, Sweep::default(), watching, watched);
        // The copy's observer is gone with it: this trainer's comes back.
        if let Ok(observer) = Rc::try_unwrap(shared) {
            self.observer = observer.into_inner();
        }
        let found = found?;
        self.observer.message(&found.said());
        // Stopped as the finder ended on its own: the run is not begun either.
        if self.stop.iter().any(|stop| stop.load(Ordering::SeqCst)) {
            return Err(Error::Interrupted);
        }
        let Some(lr) = found.lr() else {
            let (stopped, picture) = (found.stopped, found.dir.join("lr-find.svg"));
            return Err(TrainingError::NoLrSuggestion { stopped, picture }.into());
        };
        self.config = ConfigBuilder::from_config(&self.config).lr(lr).build()?;
        Ok(self)
    }

    /// `train.lr = "find"` on a resume: the rate the run found, from its `config.toml`. On a
    /// retuned resume, which asks for a new rate from the run's next step, it is refused: the
    /// finder's rate is one to start a run at, found from its first weights.
    fn at_rate_of(mut self, run_dir: &std::path::Path) -> Result<Trainer, Error> {
        if self.retune {
            return Err(Error::Config(ConfigError {
                origin: format!("--resume {}", run_dir.display()),
                key: Some("train.lr".into()),
                message: "train.lr = \"find\" on a retuned resume: the finder picks a rate to \
                          start a run at, not one to go on at from a checkpoint; give a rate \
                          (train.lr=0.001), or resume without --retune to keep the run's"
                    .into(),
            }));
        }
        let path = run_dir.join("config.toml");
        // A run without a readable config is refused by the resume itself, naming it.
        let Ok(text) = std::fs::read_to_string(&path) else {
            return Ok(self);
        };
        let saved = crate::config::parse(&text, &path.display().to_string(), &[])?;
        if !saved.train.find_lr {
            self.config = ConfigBuilder::from_config(&self.config)
                .lr(saved.train.lr)
                .build()?;
        }
        Ok(self)
    }
}

/// An observer two owners tell: the finder's copy of a run, then the run.
struct Shared(Rc<RefCell<Box<dyn Observer>>>);

impl Observer for Shared {
    fn message(&mut self, text: &str) {
        self.0.borrow_mut().message(text);
    }
    fn warning(&mut self, warning: &crate::record::Warning) {
        self.0.borrow_mut().warning(warning);
    }
    fn step(&mut self, progress: &crate::record::EpochProgress) {
        self.0.borrow_mut().step(progress);
    }
    fn step_done(&mut self, epoch: usize, step: usize) {
        self.0.borrow_mut().step_done(epoch, step);
    }
    fn snapshot(&mut self, snapshot: &crate::record::Snapshot) {
        self.0.borrow_mut().snapshot(snapshot);
    }
    fn search_status(&mut self, status: &crate::record::SearchStatus) {
        self.0.borrow_mut().search_status(status);
    }
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
