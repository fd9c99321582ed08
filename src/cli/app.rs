//! [`App`]: a program's command line, over the model kinds it registers; the `tidemark` binary
//! is the one with the built-in kinds alone.

use std::io::Write;

use clap::Parser;

use super::{run, Cli};
use crate::kinds::Kinds;
use crate::Error;

/// Runs the `tidemark` binary's command line (the built-in kinds) on the process arguments
/// and returns the exit code.
pub fn main() -> i32 {
    App::new().run()
}

/// A program's command line: every `tidemark` command, over the model kinds the program
/// registers. The `tidemark` binary is `App::new()`, the built-in kinds alone.
pub struct App {
    kinds: Kinds,
}

impl Default for App {
    fn default() -> Self {
        Self::new()
    }
}

impl App {
    /// The commands over the built-in kinds (`mlp`, `cnn`, `lstm`).
    pub fn new() -> Self {
        App {
            kinds: crate::builtin::kinds(),
        }
    }

    /// Adds a model kind of the program's own under `name`: a config's
    /// `[model] kind = "<name>"` (with the kind's keys) then trains, searches, resumes,
    /// evaluates and compares the kind's task as it does a built-in kind's.
    pub fn kind(mut self, name: &str, kind: impl crate::kinds::ModelKind) -> Self {
        self.kinds.register(name, kind);
        self
    }

    /// The kinds the commands know.
    pub fn kinds(&self) -> &Kinds {
        &self.kinds
    }

    /// Runs the command line on the process arguments and returns the exit code (0 success,
    /// 2 bad usage or config, 3 memory, 4 training that could not go on, 130 a search stopped
    /// by a signal, 1 any other failure): `std::process::exit(app.run())`.
    pub fn run(self) -> i32 {
        crate::sweep::runs_trials();
        let cli = match Cli::try_parse() {
            Ok(cli) => cli,
            Err(e) => {
                let _ = e.print();
                return if e.use_stderr() { 2 } else { 0 };
            }
        };
        exit_code(run(&self.kinds, cli))
    }
}

/// The exit code of a command's outcome, its error printed.
fn exit_code(outcome: Result<(), Error>) -> i32 {
    match outcome {
        Ok(()) => 0,
        Err(e) => {
            // Where stderr is closed, the exit code still says what happened.
            let _ = writeln!(
                std::io::stderr(),
                "error: {}",
                super::terminal::escaped(&e.to_string())
            );
            e.exit_code()
        }
    }
}
