//! [`Kind`]: what every command does with a config of one model kind (resolve its `[model]`
//! keys, train, probe, score, predict), the trait the registry holds; and the error a wrong
//! `[model]` key found at run time is.

use std::path::Path;

use crate::config::{ConfigError, Invalid, ModelConfig, RunConfig};
use crate::error::Error;
use crate::inference::{Csv, Trained};
use crate::record::RunSummary;
use crate::train::preflight::ProbedStep;
use crate::Trainer;

/// What the commands do with a config of one model kind: each builds the config's task and
/// hands it on.
pub(crate) trait Kind: Send + Sync {
    /// Checks `model`'s keys before anything runs (the error's key is the one that is wrong:
    /// `model.heads`), and writes them back with their defaults filled in where the kind's
    /// settings can be written.
    fn resolve(&self, model: &mut ModelConfig) -> Result<(), Invalid>;

    /// The metrics a run of `config` reports, known before it trains: a search checks its
    /// monitor against them.
    fn metric_names(&self, config: &RunConfig) -> Vec<String>;

    /// Trains `trainer`'s config.
    fn train(&self, trainer: Trainer) -> Result<RunSummary, Error>;

    /// One probed step of `config`.
    fn probe(&self, config: &RunConfig) -> Result<ProbedStep, Error>;

    /// `run`'s model scored on `data` (a file laid out like its data), or on its validation
    /// split without one.
    fn evaluate(&self, run: &Trained, data: Option<&Path>) -> Result<crate::task::Score, Error>;

    /// `run`'s outputs for every input of `data`, as a CSV.
    fn predict(&self, run: &Trained, data: &Path) -> Result<Csv, Error>;
}

/// A wrong `[model]` key found while a command runs, as the config's error (without a line:
/// the command line checks a config's kinds where it loads it, located).
pub(crate) fn model_error(Invalid { key, message }: Invalid) -> Error {
    let (origin, key) = ("[model]".into(), Some(key));
    Error::Config(ConfigError {
        origin,
        key,
        message,
    })
}
