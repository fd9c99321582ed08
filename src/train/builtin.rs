//! The built-in tasks, from a config's `[model]` and `[data]`: the one place that maps a model
//! kind to a type. Everything after it is generic over the task.

use super::summary::RunSummary;
use super::trainer::Trainer;
use crate::config::{ConfigError, ModelConfig};
use crate::data;
use crate::error::Error;
use crate::model::{Cnn, Mlp};
use crate::task::Classify;

/// Loads the configured data, builds the configured task and trains it.
pub(super) fn run(trainer: Trainer) -> Result<RunSummary, Error> {
    let config = trainer.config();
    let dataset = data::load(&config.data, config.run.seed)?;
    let (features, classes) = (dataset.features, dataset.classes);
    match config.model.clone() {
        ModelConfig::Mlp(mlp) => {
            let task = Classify::new(dataset.train, dataset.valid, move |device| {
                Mlp::new(&mlp, features, classes, device)
            });
            trainer.fit_task(task, true)
        }
        ModelConfig::Cnn(cnn) => {
            let per_sample: usize = cnn.input.iter().product();
            if per_sample != features {
                return Err(Error::Config(ConfigError {
                    origin: "[model]".into(),
                    key: Some("model.input".into()),
                    message: format!(
                        "model.input = {:?} is {per_sample} values per sample, but the data has \
                         {features} features",
                        cnn.input
                    ),
                }));
            }
            let task = Classify::new(dataset.train, dataset.valid, move |device| {
                Cnn::new(&cnn, classes, device)
            });
            trainer.fit_task(task, true)
        }
    }
}
