//! The built-in kinds (`mlp`, `cnn`, `lstm`) as [`Kind`]s: each command builds the config's
//! task here (its data loaded, its network's type picked) and hands it on, through a
//! [`Visit`]or, to the generic code that trains, probes or scores it.

use std::path::Path;
use std::sync::Arc;

use super::{load, metric_names, visit, Visit};
use crate::config::RunConfig;
use crate::error::Error;
use crate::inference::{score, Csv, Trained};
use crate::kinds::{Kind, Kinds};
use crate::memory::HostCounters;
use crate::model::Network;
use crate::record::RunSummary;
use crate::task::{Classify, Regress, Score, Task};
use crate::train::preflight::{probe_task, ProbedStep};
use crate::Trainer;

/// The built-in kinds, registered as a program's are.
pub fn kinds() -> Kinds {
    let mut kinds = Kinds::new();
    for name in ["mlp", "cnn", "lstm"] {
        kinds.add(name, Arc::new(Builtin));
    }
    kinds
}

/// Every built-in kind: the config's `[model]` and `[data]` say which network and task.
struct Builtin;

impl Kind for Builtin {
    fn metric_names(&self, config: &RunConfig) -> Vec<String> {
        metric_names(config).iter().map(|m| m.to_string()).collect()
    }

    fn train(&self, trainer: Trainer) -> Result<RunSummary, Error> {
        let before = HostCounters::read();
        let loaded = load(trainer.config())?;
        let after = HostCounters::read();
        // Counted only with tidemark's allocator installed (the CLI's), and only on this
        // thread's watch: another run loading at the same time would be counted too.
        let bytes = (after.installed).then(|| after.in_use.saturating_sub(before.in_use));
        let config = trainer.config().clone();
        visit(&config, loaded, Fit(trainer.data_bytes(bytes)))
    }

    fn probe(&self, config: &RunConfig) -> Result<ProbedStep, Error> {
        visit(config, load(config)?, Probe(config))
    }

    fn evaluate(&self, run: &Trained, data: Option<&Path>) -> Result<Score, Error> {
        let loaded = match data {
            Some(path) => super::inputs(&run.config, path)?.labelled(path, &run.config)?,
            None => load(&run.config)?,
        };
        visit(&run.config, loaded, Scorer(run))
    }

    fn predict(&self, run: &Trained, data: &Path) -> Result<Csv, Error> {
        super::predict::predict(run, data)
    }
}

/// A task handed to the generic code of one command.
pub(crate) trait Command {
    type Output;
    fn with<T: Task>(self, task: T) -> Result<Self::Output, Error>;
}

impl<C: Command> Visit for C {
    type Output = C::Output;

    fn classify<N: Network>(self, task: Classify<N>) -> Result<Self::Output, Error> {
        self.with(task)
    }

    fn regress<N: Network>(self, task: Regress<N>) -> Result<Self::Output, Error> {
        self.with(task)
    }
}

/// Trains the task.
struct Fit(Trainer);

impl Command for Fit {
    type Output = RunSummary;
    fn with<T: Task>(self, task: T) -> Result<RunSummary, Error> {
        self.0.fit(task)
    }
}

/// Probes one step of the task.
struct Probe<'a>(&'a RunConfig);

impl Command for Probe<'_> {
    type Output = ProbedStep;
    fn with<T: Task>(self, task: T) -> Result<ProbedStep, Error> {
        probe_task(&task, self.0)
    }
}

/// Scores a finished run's model on the task's validation items.
struct Scorer<'a>(&'a Trained);

impl Command for Scorer<'_> {
    type Output = Score;
    fn with<T: Task>(self, task: T) -> Result<Score, Error> {
        score(self.0, task)
    }
}

/// Trains the built-in task the config's `[model]` and `[data]` describe.
impl Trainer {
    /// Trains the model `[model]` describes on the data `[data]` describes, with the built-in
    /// kinds (`mlp`, `cnn`, `lstm`). A program with kinds of its own trains with its
    /// [`Kinds`]: `kinds.train(trainer)`.
    pub fn run(self) -> Result<RunSummary, Error> {
        kinds().train(self)
    }
}
