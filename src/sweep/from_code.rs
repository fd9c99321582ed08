//! [`Search`]: a search from a program's code, without the command line: the config file with
//! its `[sweep]` table, and the model kinds that build each trial's task. It writes what
//! `tidemark sweep` writes (`sweep.json`, `sweep.md`, `sweep.svg`, a run directory a trial).

use std::path::{Path, PathBuf};

use super::results::rank::TrialRow;
use super::space::Space;
use super::study::search_alone;
use crate::config::{load_raw, ConfigError, Override, RunConfig};
use crate::error::Error;
use crate::kinds::Kinds;
use crate::record::{Observer, Silent};

/// A search of a config file's `[sweep]` table, its trials' tasks built by `kinds` (the
/// built-in ones, and a program's own: [`Kinds::register`]).
///
/// With `sweep.parallel` over 1, each trial runs in a child process of a program whose command
/// line is [`App`](crate::App) with the same kinds: this program, where it runs one, or
/// the one `TIDEMARK_BIN` names.
pub struct Search {
    kinds: Kinds,
    config: RunConfig,
    space: Space,
}

impl Search {
    /// The search the config file at `path` describes, with `overrides` (as `--set` gives
    /// them); an error where the file has no `[sweep]` table, or a key is wrong (named, with
    /// where).
    pub fn from_file(kinds: Kinds, path: &Path, overrides: &[Override]) -> Result<Self, Error> {
        let file = load_raw(path, overrides)?;
        let config = file.config(&|c| kinds.resolve(c))?;
        let Some(space) = Space::of_file(&file)? else {
            return Err(Error::Config(ConfigError {
                origin: path.display().to_string(),
                key: Some("sweep".into()),
                message: "has no [sweep] table: a search's trials come from it".into(),
            }));
        };
        Ok(Self {
            kinds,
            config,
            space,
        })
    }

    /// The search's base config.
    pub fn config(&self) -> &RunConfig {
        &self.config
    }

    /// Runs the search in a new `<run.output_dir>/<run.name>-sweep/`, quietly; returns the
    /// directory and the trials' rows, ranked.
    pub fn run(&self) -> Result<(PathBuf, Vec<TrialRow>), Error> {
        self.run_with(|_, _| Box::new(Silent))
    }

    /// [`run`](Self::run), with `observer(i, n)` watching trial `i` of `n` (`0`: the search
    /// itself, its probes and its order).
    pub fn run_with(
        &self,
        observer: impl FnMut(usize, usize) -> Box<dyn Observer>,
    ) -> Result<(PathBuf, Vec<TrialRow>), Error> {
        search_alone(&self.kinds, &self.config, &self.space, observer)
    }
}
