//! The built-in kinds (`mlp`, `cnn`, `lstm`) as [`Kind`]s, registered as a program's are: each
//! is its network's module and its settings (`model::MlpConfig`, ...). Each command builds the
//! config's task here (its data loaded, its network built from the kind's settings) and hands
//! it on, through a [`Visit`]or, to the generic code that trains, probes or scores it.

use std::marker::PhantomData;
use std::path::Path;
use std::sync::Arc;

use super::loaded::{load, metric_names};
use super::networks::{settings_of, Builtin};
use super::{visit, Visit};
use crate::config::{Invalid, ModelConfig, RunConfig};
use crate::error::Error;
use crate::inference::{score, Csv, Trained};
use crate::kinds::kind::Kind;
use crate::kinds::Kinds;
use crate::memory::HostCounters;
use crate::model::{Cnn, Lstm, Mlp, Network};
use crate::record::RunSummary;
use crate::task::{Classify, Regress, Score, Task};
use crate::train::preflight::{probe_task, ProbedStep};
use crate::Trainer;

impl Kinds {
    /// The built-in kinds (`mlp`, `cnn`, `lstm`): the `tidemark` binary's, which a program's
    /// own kinds are registered beside.
    pub fn builtin() -> Self {
        kinds()
    }
}

/// The built-in kinds, registered as a program's are.
fn kinds() -> Kinds {
    let mut kinds = Kinds::new();
    kinds.add(Mlp::NAME, Arc::new(BuiltinKind::<Mlp>(PhantomData)));
    kinds.add(Cnn::NAME, Arc::new(BuiltinKind::<Cnn>(PhantomData)));
    kinds.add(Lstm::NAME, Arc::new(BuiltinKind::<Lstm>(PhantomData)));
    kinds
}

/// The built-in kind of network `N`: the config's `[model]` says its settings, `[data]` its
/// task.
struct BuiltinKind<N>(PhantomData<fn() -> N>);

impl<N: Builtin> BuiltinKind<N> {
    /// `config`'s settings, checked, or the config's error.
    fn settings(&self, config: &RunConfig) -> Result<N::Settings, Error> {
        settings_of::<N>(&config.model).map_err(crate::kinds::kind::model_error)
    }
}

impl<N: Builtin> Kind for BuiltinKind<N> {
    fn resolve(&self, model: &mut ModelConfig) -> Result<(), Invalid> {
        let settings = settings_of::<N>(model)?;
        *model = ModelConfig::with_settings(&model.kind, &settings)
            .expect("a built-in kind's settings write as a table of keys");
        Ok(())
    }

    fn metric_names(&self, config: &RunConfig) -> Vec<String> {
        metric_names(config).iter().map(|m| m.to_string()).collect()
    }

    fn train(&self, trainer: Trainer) -> Result<RunSummary, Error> {
        let settings = self.settings(trainer.config())?;
        let before = HostCounters::read();
        let loaded = load(trainer.config())?;
        let after = HostCounters::read();
        // Counted only with tidemark's allocator installed (the CLI's), and only on this
        // thread's watch: another run loading at the same time would be counted too.
        let bytes = (after.installed).then(|| after.in_use.saturating_sub(before.in_use));
        visit::<N, _>(settings, loaded, Fit(trainer.data_bytes(bytes)))
    }

    fn probe(&self, config: &RunConfig) -> Result<ProbedStep, Error> {
        let settings = self.settings(config)?;
        visit::<N, _>(settings, load(config)?, Probe(config))
    }

    fn evaluate(&self, run: &Trained, data: Option<&Path>) -> Result<Score, Error> {
        let settings = self.settings(&run.config)?;
        let loaded = match data {
            Some(path) => super::inputs::inputs(&run.config, path)?.labelled(path, &run.config)?,
            None => load(&run.config)?,
        };
        visit::<N, _>(settings, loaded, Scorer(run))
    }

    fn predict(&self, run: &Trained, data: &Path) -> Result<Csv, Error> {
        super::predict::predict::<N>(run, data, self.settings(&run.config)?)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CnnConfig, LstmConfig, MlpConfig};

    /// The keys `N`'s settings take, as serde lists them for an unknown one.
    fn serde_keys<N: Builtin>() -> Vec<String> {
        let mut model = ModelConfig {
            kind: N::NAME.into(),
            settings: toml::Table::new(),
        };
        model.settings.insert("zz".into(), 0.into());
        let message = model.settings::<N::Settings>().err().unwrap().message;
        let listed = message.split_once("expected").unwrap().1;
        let keys = listed.trim_start_matches(" one of").split([',', ' ']);
        keys.filter(|k| !k.is_empty() && *k != "or")
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn each_built_in_kind_s_keys_are_its_settings_fields() {
        for (keys, serde) in [
            (Mlp::KEYS, serde_keys::<Mlp>()),
            (Cnn::KEYS, serde_keys::<Cnn>()),
            (Lstm::KEYS, serde_keys::<Lstm>()),
        ] {
            assert_eq!(keys, serde, "KEYS against the settings' fields");
        }
    }

    /// `[model]` of `text`'s keys, resolved by the built-in kinds.
    fn resolved(text: &str) -> Result<ModelConfig, Invalid> {
        let file = format!("[run]\nname = \"t\"\n[model]\n{text}\n");
        let mut config = crate::config::parse(&file, "t.toml", &[]).unwrap();
        kinds().resolve(&mut config)?;
        Ok(config.model)
    }

    #[test]
    fn a_built_in_kind_reads_its_keys_with_their_defaults_and_says_what_is_wrong() {
        // Nothing but the name: the kind's defaults, written back as config.toml records them.
        let mlp = resolved("").unwrap();
        let written = crate::config::to_toml(&crate::config::RunConfig {
            model: mlp.clone(),
            ..crate::config::parse("[run]\nname = \"t\"", "t", &[]).unwrap()
        });
        assert!(
            written.contains("[model]\nkind = \"mlp\"\nactivation = \"relu\"\ndropout = 0.0\nhidden = [\n    1024,\n    1024,\n]"),
            "{written}"
        );
        let mlp: MlpConfig = mlp.settings().unwrap();
        assert_eq!(mlp, MlpConfig::default());
        let lstm: LstmConfig = resolved("kind = \"lstm\"").unwrap().settings().unwrap();
        assert_eq!(lstm.hidden, [32]);
        let cnn = resolved("kind = \"cnn\"\ninput = [1, 8, 8]").unwrap();
        let cnn: CnnConfig = cnn.settings().unwrap();
        assert_eq!(
            (cnn.channels, cnn.kernel_size, cnn.pool),
            (vec![16, 32], 3, 2)
        );
        // Each error names its key, as the config's own do.
        for (text, key, message) in [
            (
                "hidden = [64, -3]",
                "model.hidden[1]",
                "model.hidden[1] must be > 0, got -3",
            ),
            (
                "dropout = 1.0",
                "model.dropout",
                "model.dropout must be in [0, 1), got 1",
            ),
            (
                "activation = \"swish\"",
                "model.activation",
                "model.activation must be one of \"relu\", \"gelu\", \"tanh\", \"sigmoid\", \
                 got \"swish\"",
            ),
            (
                "pool = 2",
                "model.pool",
                "model.pool only applies with model.kind = \"cnn\"",
            ),
            (
                "kind = \"lstm\"\ndropout = 0.1",
                "model.dropout",
                "model.dropout only applies with model.kind = \"mlp\" or model.kind = \"cnn\"",
            ),
            (
                "kind = \"lstm\"\nhidden = []",
                "model.hidden",
                "model.hidden needs at least one LSTM layer",
            ),
            (
                "kind = \"cnn\"",
                "model.input",
                "model.input is required with model.kind = \"cnn\"",
            ),
            (
                "kind = \"cnn\"\ninput = [1, 8]",
                "model.input",
                "model.input must be [channels, height, width], got [1, 8]",
            ),
            (
                "kind = \"cnn\"\ninput = [1, 4, 4]\nchannels = [8, 8, 8]",
                "model.pool",
                "model.pool = 2 after each of 3 blocks shrinks a 4x4 input to nothing",
            ),
            (
                "kind = \"gpt\"",
                "model.kind",
                "model.kind = \"gpt\" is not a kind this program knows; it knows cnn, lstm, mlp",
            ),
        ] {
            let error = resolved(text).unwrap_err();
            assert_eq!(
                (error.key.as_str(), error.message.as_str()),
                (key, message),
                "{text}"
            );
        }
    }
}
