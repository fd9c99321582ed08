//! Model kinds by name: what a config's `[model] kind` names, and the one way every command
//! reaches a task built from a config. A [`Kinds`] registry maps each name to a `Kind`, which
//! builds the config's task and hands it to the command: train it, probe one step of it, score
//! or predict with a finished run of it.
//!
//! Nothing below this module knows which kinds exist: the trainer, the probes and the inference
//! code are generic over the task. The built-in kinds (`mlp`, `cnn`, `lstm`) register here as
//! an app's do, from the top (the command line's `App`).

pub(crate) mod builtin;
mod kind;
mod model_kind;
mod owned;

pub(crate) use kind::{model_error, Kind};
pub use model_kind::ModelKind;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::config::{ConfigError, Invalid, ModelConfig, Override, RunConfig};
use crate::error::Error;
use crate::inference::{Evaluation, Predictions, Trained};
use crate::record::RunSummary;
use crate::train::preflight::ProbedStep;
use crate::Trainer;

/// The model kinds a program knows, by name.
#[derive(Clone, Default)]
pub struct Kinds {
    by_name: BTreeMap<String, Arc<dyn Kind>>,
    /// The names of the kinds added by tidemark itself, which a program's cannot replace.
    builtin: Vec<String>,
}

impl Kinds {
    /// No kinds.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds tidemark's own `kind` under `name`.
    pub(crate) fn add(&mut self, name: &str, kind: Arc<dyn Kind>) {
        self.by_name.insert(name.to_string(), kind);
        self.builtin.push(name.to_string());
    }

    /// Adds a program's own kind under `name`, replacing any kind of the program's of that
    /// name.
    ///
    /// # Panics
    /// Where `name` is a built-in kind's (`mlp`, `cnn`, `lstm`) among these kinds: runs of it
    /// would mean two things. A program's code names its kinds, so this is the program's
    /// error, at its start.
    pub fn register(&mut self, name: &str, kind: impl ModelKind) {
        assert!(
            !self.builtin.iter().any(|b| b == name),
            "Kinds::register: \"{name}\" is a built-in kind's name; give the kind another"
        );
        let kind = model_kind::AppKind {
            name: name.to_string(),
            kind,
        };
        // A program's own: not among the built-in names, so registered again it is replaced.
        self.by_name.insert(name.to_string(), Arc::new(kind));
    }

    /// The names known, in order.
    pub fn names(&self) -> Vec<&str> {
        self.by_name.keys().map(String::as_str).collect()
    }

    /// The kind `config`'s `[model]` names; an error naming the kinds there are.
    pub(crate) fn of(&self, config: &RunConfig) -> Result<&dyn Kind, Error> {
        self.named(config).map(|k| k.as_ref()).map_err(model_error)
    }

    fn named(&self, config: &RunConfig) -> Result<&Arc<dyn Kind>, Invalid> {
        self.named_model(&config.model)
    }

    fn named_model(&self, model: &ModelConfig) -> Result<&Arc<dyn Kind>, Invalid> {
        let name = model.kind();
        match self.by_name.get(name) {
            Some(kind) => Ok(kind),
            None => Err(Invalid {
                key: "model.kind".into(),
                message: format!(
                    "model.kind = \"{name}\" is not a kind this program knows; it knows {}",
                    match self.names().is_empty() {
                        true => "none".to_string(),
                        false => self.names().join(", "),
                    }
                ),
            }),
        }
    }

    /// Checks `config`'s model kind and its keys: the kind is one this program knows, and its
    /// keys are the kind's. The error names the key (for the config's location).
    pub fn check(&self, config: &RunConfig) -> Result<(), Invalid> {
        self.resolve(&mut config.clone())
    }

    /// [`check`](Self::check)s `config`'s model kind and keys, and writes the keys back with
    /// the kind's defaults filled in (a built-in kind's: `hidden = [1024, 1024]` where none
    /// is given), as a run's `config.toml` records them.
    pub fn resolve(&self, config: &mut RunConfig) -> Result<(), Invalid> {
        self.resolve_model(&mut config.model)
    }

    /// `config` [`resolve`](Self::resolve)d, or the config's error: what a sweep writes as its
    /// `config.toml` and compares a resume with.
    pub(crate) fn resolved(&self, config: &RunConfig) -> Result<RunConfig, Error> {
        let mut config = config.clone();
        self.resolve(&mut config).map_err(model_error)?;
        Ok(config)
    }

    /// [`resolve`](Self::resolve) of a `[model]` table alone (a run's own `config.toml`'s,
    /// read back to compare on a resume).
    pub(crate) fn resolve_model(&self, model: &mut ModelConfig) -> Result<(), Invalid> {
        self.named_model(model)?.resolve(model)
    }

    /// The config at `path` with `overrides`, its model kind's keys checked and resolved
    /// ([`resolve`](Self::resolve)), each error located at its line or override.
    pub fn load(&self, path: &Path, overrides: &[Override]) -> Result<RunConfig, ConfigError> {
        crate::config::load_checked(path, overrides, &|c| self.resolve(c))
    }

    /// Trains `trainer`'s config with its kind, its model's keys resolved first.
    pub fn train(&self, mut trainer: Trainer) -> Result<RunSummary, Error> {
        let kind = Arc::clone(self.named(trainer.config()).map_err(model_error)?);
        kind.resolve(&mut trainer.config_mut().model)
            .map_err(model_error)?;
        // A resumed run's own `[model]` is read as this one is, before they are compared.
        let reading = Arc::clone(&kind);
        let trainer = trainer.resolving_model(Arc::new(move |m| reading.resolve(m)));
        kind.train(trainer)
    }

    /// One probed step of `config`, with its kind.
    pub(crate) fn probe(&self, config: &RunConfig) -> Result<ProbedStep, Error> {
        self.of(config)?.probe(config)
    }

    /// The metrics a run of `config` reports.
    pub(crate) fn metric_names(&self, config: &RunConfig) -> Result<Vec<String>, Error> {
        Ok(self.of(config)?.metric_names(config))
    }

    /// Scores `run`'s model on `data` (a file laid out like the run's own data), or on the
    /// run's validation split without one, and writes `<run_dir>/evaluation.json`.
    pub fn evaluate(&self, run: &Trained, data: Option<&Path>) -> Result<Evaluation, Error> {
        // Checked before scoring: `evaluation.json` records the file's name, as text.
        if let Some(data) = data {
            crate::config::path_text("--data", data)?;
        }
        let score = self.of(&run.config)?.evaluate(run, data)?;
        crate::inference::record_evaluation(run, data, score)
    }

    /// Writes `run`'s outputs for every input of `data` (a file laid out like the run's own
    /// data) to the CSV file `out`.
    pub fn predict(&self, run: &Trained, data: &Path, out: &Path) -> Result<Predictions, Error> {
        let csv = self.of(&run.config)?.predict(run, data)?;
        crate::inference::write_predictions(out, csv)
    }
}
