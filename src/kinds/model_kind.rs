//! A program's own model kind: [`ModelKind`], the trait an app implements (its `[model]` keys
//! as a serde struct of its own, and the task a config of the kind trains), and the adapter
//! that makes it a [`Kind`] every command reaches as it reaches a built-in one.

use std::path::Path;

use burn::tensor::Tensor;
use serde::de::DeserializeOwned;

use super::kind::Kind;
use super::owned::Owned;
use crate::config::{Invalid, ModelConfig, RunConfig};
use crate::error::{Error, UsageError};
use crate::inference::Csv;
use crate::inference::{outputs, score, Trained};
use crate::record::RunSummary;
use crate::task::{Score, Task};
use crate::train::preflight::{probe_task, ProbedStep};
use crate::Trainer;

/// A model kind of a program's own, registered by name with
/// [`App::kind`](crate::App::kind): `[model] kind = "<name>"` and the kind's keys. The
/// guide's "Your model in every command" (docs/library.md) has a whole program, and
/// `examples/custom_model` is an app of its own.
pub trait ModelKind: Send + Sync + 'static {
    /// The kind's `[model]` keys but `kind`, as the program's serde struct: an unknown key or
    /// a value of the wrong type is the config's error, located and naming the key (use
    /// `#[serde(deny_unknown_fields)]`, and `#[serde(default)]` for optional keys).
    type Settings: DeserializeOwned;
    /// What a config of the kind trains.
    type Task: Task;

    /// Checks `settings` beyond their types (a range, a relation between keys): the error's
    /// `key` is the setting's name (`heads`), its `message` what is wrong.
    fn check(&self, settings: &Self::Settings) -> Result<(), Invalid> {
        let _ = settings;
        Ok(())
    }

    /// The metrics the kind's task reports (`accuracy`), known before it trains: a search's
    /// monitor may be `val_loss` or `val_<metric>` of these, and a run checks its monitors
    /// (`train.early_stopping`, a plateau's, `checkpoint.keep_best`) against them before its
    /// first step. Declared here, once: the task's own
    /// [`Task::metric_names`](crate::task::Task::metric_names) is then not asked.
    fn metrics(&self) -> &'static [&'static str] {
        &[]
    }

    /// The task a config of this kind trains: its model from `settings`, its data (its own, or
    /// from `config.data`).
    fn task(&self, settings: Self::Settings, config: &RunConfig) -> Result<Self::Task, Error>;

    /// The task over the items of the file `path` (laid out like the kind's data), for
    /// `evaluate --data` and `predict --data`: its validation split is the file's items, in
    /// order. `None`, the default: the kind reads no files.
    fn task_on_file(
        &self,
        settings: Self::Settings,
        config: &RunConfig,
        path: &Path,
    ) -> Result<Option<Self::Task>, Error> {
        let _ = (settings, config, path);
        Ok(None)
    }

    /// What `predict` writes for a batch: the model's outputs, a row per item, in the columns
    /// [`output_names`](Self::output_names) names. `None`, the default: the kind does not
    /// predict from the command line.
    fn outputs(&self, model: &Model<Self>, batch: Batch<Self>) -> Option<Tensor<2>> {
        let _ = (model, batch);
        None
    }

    /// The names of [`outputs`](Self::outputs)' columns (`prediction`); the default, and any
    /// left unnamed, `output_<i>`.
    fn output_names(&self) -> &'static [&'static str] {
        &[]
    }

    /// Whether the kind's data is its own and `[data]` is not read: its runs' `config.toml`
    /// then has no `[data]`, and a resume compares none.
    fn own_data(&self) -> bool {
        false
    }
}

/// A kind's model.
type Model<K> = <<K as ModelKind>::Task as Task>::Model;
/// A kind's batch.
type Batch<K> = <<K as ModelKind>::Task as Task>::Batch;

/// A [`ModelKind`] as a [`Kind`], under its registered `name`.
pub(super) struct AppKind<K> {
    pub(super) name: String,
    pub(super) kind: K,
}

impl<K: ModelKind> AppKind<K> {
    /// `config`'s `[model]` keys read into the kind's settings and checked.
    fn settings(&self, model: &ModelConfig) -> Result<K::Settings, Invalid> {
        let settings: K::Settings = model.settings()?;
        self.kind
            .check(&settings)
            .map_err(|Invalid { key, message }| Invalid {
                key: format!("model.{key}"),
                message: format!("model.{key}: {message}"),
            })?;
        Ok(settings)
    }

    /// `config`'s settings, or the config's error.
    fn settings_or_error(&self, config: &RunConfig) -> Result<K::Settings, Error> {
        self.settings(&config.model)
            .map_err(super::kind::model_error)
    }

    /// The task `config` trains, owning its `[model]` and `[data]` (its run's `config.toml`
    /// keeps them, for `--resume`, `evaluate` and `predict`).
    fn task(&self, config: &RunConfig) -> Result<Owned<K::Task>, Error> {
        let task = self.kind.task(self.settings_or_error(config)?, config)?;
        let (own_data, metrics) = (self.kind.own_data(), self.kind.metrics());
        Ok(Owned::new(task, &self.name, own_data, metrics))
    }

    /// The task over the file `path`, for `command`; an error where the kind reads no files.
    fn task_on_file(
        &self,
        config: &RunConfig,
        path: &Path,
        command: &str,
    ) -> Result<K::Task, Error> {
        let settings = self.settings_or_error(config)?;
        match self.kind.task_on_file(settings, config, path)? {
            Some(task) => Ok(task),
            None => Err(Error::Usage(UsageError::new(
                format!("--data {}", path.display()),
                format!(
                    "model kind \"{}\" reads no files (its ModelKind::task_on_file is not \
                     written), so {command} takes no --data{}",
                    self.name,
                    match command {
                        "evaluate" => ": evaluate the run on its own validation split",
                        _ => "",
                    }
                ),
            ))),
        }
    }
}

impl<K: ModelKind> Kind for AppKind<K> {
    /// Checks the kind's keys; they stay as written (the program's settings need not
    /// serialise).
    fn resolve(&self, model: &mut ModelConfig) -> Result<(), Invalid> {
        self.settings(model).map(drop)
    }

    fn metric_names(&self, _config: &RunConfig) -> Vec<String> {
        self.kind.metrics().iter().map(|m| m.to_string()).collect()
    }

    fn train(&self, trainer: Trainer) -> Result<RunSummary, Error> {
        let task = self.task(trainer.config())?;
        trainer.fit(task)
    }

    fn probe(&self, config: &RunConfig) -> Result<ProbedStep, Error> {
        probe_task(&self.task(config)?, config)
    }

    fn evaluate(&self, run: &Trained, data: Option<&Path>) -> Result<Score, Error> {
        match data {
            None => score(run, self.task(&run.config)?),
            Some(path) => score(run, self.task_on_file(&run.config, path, "evaluate")?),
        }
    }

    fn predict(&self, run: &Trained, data: &Path) -> Result<Csv, Error> {
        let task = self.task_on_file(&run.config, data, "predict")?;
        let none = || {
            let message = format!("model kind \"{}\" gives no outputs to predict", self.name);
            Error::Usage(UsageError::new(
                format!("--data {}", data.display()),
                format!("{message}: its ModelKind::outputs is not written"),
            ))
        };
        let rows = outputs(run, &task, |model, batch| {
            self.kind.outputs(model, batch).ok_or_else(none)
        })?;
        Ok(csv(&rows, self.kind.output_names()))
    }
}

/// `predict`'s CSV: `row`, then each output in a column named by `names` (`output_<i>` past
/// them).
fn csv(rows: &[Vec<f32>], names: &[&str]) -> Csv {
    let width = rows.first().map_or(names.len(), Vec::len);
    let name = |i: usize| {
        names
            .get(i)
            .map_or(format!("output_{i}"), |n| n.to_string())
    };
    let columns: Vec<String> = std::iter::once("row".into())
        .chain((0..width).map(name))
        .collect();
    let mut text = columns.join(",") + "\n";
    for (i, row) in rows.iter().enumerate() {
        let values: Vec<String> = row.iter().map(|v| v.to_string()).collect();
        text += &format!("{i},{}\n", values.join(","));
    }
    (columns, text)
}
