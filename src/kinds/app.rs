//! A program's own model kind: [`ModelKind`], the trait an app implements (its `[model]` keys
//! as a serde struct of its own, and the task a config of the kind trains), and the adapter
//! that makes it a [`Kind`] every command reaches as it reaches a built-in one.

use std::path::Path;

use serde::de::DeserializeOwned;

use super::owned::Owned;
use super::{Csv, Kind};
use crate::config::{describe_key_error, ConfigError, Invalid, ModelConfig, RunConfig};
use crate::error::Error;
use crate::inference::{score, Trained};
use crate::record::RunSummary;
use crate::task::{Score, Task};
use crate::train::preflight::{probe_task, ProbedStep};
use crate::Trainer;

/// A model kind of a program's own, registered by name with
/// [`App::kind`](crate::cli::App::kind): `[model] kind = "<name>"` and the kind's keys. The
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
    /// monitor may be `val_loss` or `val_<metric>` of these.
    fn metrics(&self) -> &'static [&'static str] {
        &[]
    }

    /// The task a config of this kind trains: its model from `settings`, its data (its own, or
    /// from `config.data`).
    fn task(&self, settings: Self::Settings, config: &RunConfig) -> Result<Self::Task, Error>;
}

/// A [`ModelKind`] as a [`Kind`], under its registered `name`.
pub(super) struct AppKind<K> {
    pub(super) name: String,
    pub(super) kind: K,
}

impl<K: ModelKind> AppKind<K> {
    /// `config`'s `[model]` keys read into the kind's settings and checked.
    fn settings(&self, config: &RunConfig) -> Result<K::Settings, Invalid> {
        let ModelConfig::App(app) = &config.model else {
            return Err(Invalid {
                key: "model.kind".into(),
                message: format!(
                    "model.kind = \"{}\" is a built-in kind",
                    config.model.kind()
                ),
            });
        };
        let table = toml::Value::Table(app.settings.clone());
        let settings: K::Settings = serde_path_to_error::deserialize(table).map_err(|e| {
            let key = format!("model.{}", e.path()).replace("model..", "model");
            let message = describe_key_error(&key, &e.into_inner().to_string());
            Invalid { key, message }
        })?;
        self.kind
            .check(&settings)
            .map_err(|Invalid { key, message }| Invalid {
                key: format!("model.{key}"),
                message: format!("model.{key}: {message}"),
            })?;
        Ok(settings)
    }

    /// The task `config` trains, owning its `[model]` and `[data]` (its run's `config.toml`
    /// keeps them, for `--resume`, `evaluate` and `predict`).
    fn task(&self, config: &RunConfig) -> Result<Owned<K::Task>, Error> {
        let settings = self.settings(config).map_err(|Invalid { key, message }| {
            let origin = "[model]".into();
            Error::Config(ConfigError {
                origin,
                key: Some(key),
                message,
            })
        })?;
        let task = self.kind.task(settings, config)?;
        Ok(Owned::new(task, &self.name))
    }
}

impl<K: ModelKind> Kind for AppKind<K> {
    fn check(&self, config: &RunConfig) -> Result<(), Invalid> {
        self.settings(config).map(drop)
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
        if let Some(path) = data {
            let instead = "evaluate the run without --data: on its own validation split";
            return Err(not_a_file_kind(&self.name, "evaluate", path, instead));
        }
        score(run, self.task(&run.config)?)
    }

    fn predict(&self, _run: &Trained, data: &Path) -> Result<Csv, Error> {
        let instead = "the app predicts with its own code, from the run's model \
                       (tidemark::inference::task_model)";
        Err(not_a_file_kind(&self.name, "predict", data, instead))
    }
}

/// The error of a file given to a kind that reads no files: its task brings its own data.
fn not_a_file_kind(kind: &str, command: &str, path: &Path, instead: &str) -> Error {
    Error::Config(ConfigError {
        origin: format!("--data {}", path.display()),
        key: None,
        message: format!(
            "model kind \"{kind}\" brings its own data, and {command} reads a file only for \
             the built-in kinds; {instead}"
        ),
    })
}
