//! Using a finished run: [`Trained`] opens it (its `config.toml` and one of its checkpoints);
//! its model kind scores the model on data or writes its outputs for every input
//! (`Kinds::evaluate`, `Kinds::predict`), with the generic parts here.
//!
//! A task defined in code is scored from Rust with [`evaluate_task`], given the task, and
//! [`task_model`] gives its trained model to predict with, through the task's own forward
//! pass.

mod evaluate;
mod predict;

pub use evaluate::{evaluate_task, Evaluation};
pub(crate) use evaluate::{record_evaluation, score};
pub use predict::Predictions;
pub(crate) use predict::{outputs, write_predictions, Csv};

use std::path::{Path, PathBuf};

use burn::module::Module;
use burn::store::ModuleSnapshot;
use burn::tensor::Device;

use crate::config::RunConfig;
use crate::error::{Error, UsageError};
use crate::model::initialize;
use crate::record::RunSummary;
use crate::train::Checkpoint;

/// A finished run, opened to use its model.
pub struct Trained {
    /// The run directory.
    pub run_dir: PathBuf,
    /// Its `config.toml`.
    pub config: RunConfig,
    /// The checkpoint whose weights are used.
    pub checkpoint: Checkpoint,
    /// That checkpoint's directory name (`epoch-3`).
    pub checkpoint_name: String,
    pub(crate) device: Device,
}

impl Trained {
    /// Opens `run_dir` with the checkpoint `checkpoint` names (`best`, `latest` or a directory
    /// such as `epoch-3`); `None`: the run's final weights, the checkpoint its `summary.json`
    /// names (the best epoch's under early stopping with `restore_best`), else `latest`.
    pub fn open(run_dir: &Path, checkpoint: Option<&str>) -> Result<Self, Error> {
        Self::open_run(run_dir, checkpoint, false)
    }

    /// [`open`](Self::open), also for a run of a task defined in code (`code`), whose model
    /// and data the caller's task gives.
    fn open_run(run_dir: &Path, checkpoint: Option<&str>, code: bool) -> Result<Self, Error> {
        // The run's directory is recorded in `evaluation.json`, which holds text only.
        crate::config::path_text("the run directory", run_dir)?;
        let path = run_dir.join("config.toml");
        // A missing directory, a file in its place, or one without a config: one error.
        if !path.is_file() {
            return Err(Error::not_a_run(run_dir, &path));
        }
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        if let Some(task) = crate::train::run_dir::code_task(&text).filter(|_| !code) {
            return Err(Error::Usage(UsageError::new(
                path.display().to_string(),
                format!(
                    "the run trained task {task}, defined in code: score its model from Rust \
                     with tidemark::inference::evaluate_task"
                ),
            )));
        }
        let config = crate::config::parse(&text, &path.display().to_string(), &[])?;
        let checkpoint = match checkpoint {
            Some(name) => Checkpoint::open(run_dir, name)?,
            None => final_weights(run_dir)?,
        };
        let checkpoint_name = checkpoint
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let device = crate::backend::select(&config.device)?;
        Ok(Self {
            run_dir: run_dir.to_path_buf(),
            config,
            checkpoint,
            checkpoint_name,
            device,
        })
    }

    /// The model `build` makes, with the checkpoint's weights, on the run's device: its
    /// moving average where the run kept one and `train.ema.evaluate_with = "average"`.
    pub(crate) fn model<M: Module + ModuleSnapshot>(
        &self,
        build: impl Fn(&Device) -> M,
    ) -> Result<M, Error> {
        let mut model = build(&self.device);
        initialize(&model);
        let average = (self.config.train.ema.as_ref())
            .is_some_and(|e| e.evaluate_with == crate::config::EmaWeights::Average);
        match average {
            true => (self.checkpoint)
                .load_module(&mut model, crate::train::CheckpointFile::Ema.name())?,
            false => self.checkpoint.load_model(&mut model)?,
        }
        Ok(model)
    }

    /// Items per forward pass: the run's batch size.
    pub(crate) fn batch_size(&self) -> usize {
        self.config.train.batch_size
    }
}

/// The model of a run of `task`, a task defined in code, left in `run_dir`: built by the task,
/// with the run's final weights (the checkpoint `tidemark predict` takes), on the run's device,
/// for predictions through the task's own forward pass. A task's outputs are its own, so this
/// is predict's one call for a task the CLI cannot build.
pub fn task_model<T: crate::task::Task>(run_dir: &Path, task: &T) -> Result<T::Model, Error> {
    let run = Trained::open_run(run_dir, None, true)?;
    run.model(|device| task.model(device))
}

/// The checkpoint `summary.json` says holds the run's final weights, or `latest` if the run
/// has no summary (it was killed) or the summary names none.
fn final_weights(run_dir: &Path) -> Result<Checkpoint, Error> {
    let named = RunSummary::read(run_dir)?
        .and_then(|s| s.checkpoint)
        .and_then(|dir| Some(dir.file_name()?.to_string_lossy().into_owned()));
    match named {
        Some(name) => Checkpoint::recorded(run_dir, &name, &run_dir.join("summary.json")),
        None => Checkpoint::latest(run_dir),
    }
}
