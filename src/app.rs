//! [`App`]: a program's command line, over the model kinds it registers and with commands of
//! its own; the `tidemark` binary is the one with the built-in kinds alone. The commands
//! themselves are `cli`'s, private to the crate.

use std::io::Write;

use clap::{CommandFactory, FromArgMatches};

use crate::cli::{run, Cli};
use crate::kinds::Kinds;
use crate::Error;

/// A program's command line: every `tidemark` command, over the model kinds the program
/// registers, and any command of its own. The `tidemark` binary is `App::new()`, the built-in
/// kinds alone.
///
/// ```no_run
/// use tidemark::clap::{Arg, Command};
///
/// let app = tidemark::App::new()
///     .name("sales")
///     .about("Sales forecasts on tidemark")
///     .command(
///         Command::new("hello").about("Greets").arg(Arg::new("who").required(true)),
///         |args| {
///             let who: &String = args.get_one("who").expect("required");
///             println!("hello, {who}");
///             Ok(())
///         },
///     );
/// std::process::exit(app.run());
/// ```
pub struct App {
    kinds: Kinds,
    /// What the help and errors call the program: its binary's name unless set.
    name: Option<String>,
    about: Option<String>,
    /// The program's own commands, beside tidemark's.
    commands: Vec<OwnCommand>,
}

/// A command of the program's own and what runs it.
struct OwnCommand {
    command: clap::Command,
    run: Box<RunOwn>,
}

/// What runs a program's own command, on its arguments.
type RunOwn = dyn Fn(&clap::ArgMatches) -> Result<(), Error>;

impl Default for App {
    fn default() -> Self {
        Self::new()
    }
}

impl App {
    /// The commands over the built-in kinds (`mlp`, `cnn`, `lstm`).
    pub fn new() -> Self {
        App {
            kinds: Kinds::builtin(),
            name: None,
            about: None,
            commands: Vec::new(),
        }
    }

    /// Adds a model kind of the program's own under `name`: a config's
    /// `[model] kind = "<name>"` (with the kind's keys) then trains, searches, resumes,
    /// evaluates and compares the kind's task as it does a built-in kind's.
    pub fn kind(mut self, name: &str, kind: impl crate::kinds::ModelKind) -> Self {
        self.kinds.register(name, kind);
        self
    }

    /// What the help, its examples and usage errors call the program (its binary's file
    /// name unless set).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The program's line at the top of its help (tidemark's unless set).
    pub fn about(mut self, about: impl Into<String>) -> Self {
        self.about = Some(about.into());
        self
    }

    /// Adds a command of the program's own beside tidemark's: `command` (a
    /// [`clap::Command`], its name and arguments) is parsed as tidemark's are, listed in the
    /// help, and `run` gets its arguments; an error it returns is printed and exits with its
    /// code, as a tidemark command's. A name tidemark's commands have already is refused
    /// when the program starts (a panic: the program's own mistake, not its user's).
    pub fn command(
        mut self,
        command: clap::Command,
        run: impl Fn(&clap::ArgMatches) -> Result<(), Error> + 'static,
    ) -> Self {
        let taken = Cli::command()
            .get_subcommands()
            .any(|c| c.get_name() == command.get_name());
        assert!(
            !taken,
            "App::command: tidemark has a `{}` command already",
            command.get_name()
        );
        self.commands.push(OwnCommand {
            command,
            run: Box::new(run),
        });
        self
    }

    /// The kinds the commands know.
    pub fn kinds(&self) -> &Kinds {
        &self.kinds
    }

    /// Runs the command line on the process arguments and returns the exit code (0 success,
    /// 2 bad usage or config, 3 memory, 4 training that could not go on, 130 a search stopped
    /// by a signal, 1 any other failure): `std::process::exit(app.run())`. Call it from
    /// `main`. The thread becomes one of the CPU backend's compute threads
    /// ([`join_compute_pool`](crate::backend::join_compute_pool)): at once in every command
    /// but `sweep`, and in `sweep` once its config says that the search trains its trials on
    /// this thread, one at a time (`sweep.parallel = 1`, or runs). A search with trials in
    /// parallel stays apart from the pool: it probes each trial in its own process to size the
    /// leases of children that may run with fewer threads, and a child with one thread (two
    /// trials on two cores) takes about a packing buffer's size more in its step than a probe
    /// with two, which the searching process's one more thread covers (docs/search.md, "Trials
    /// in parallel under a memory budget").
    pub fn run(self) -> i32 {
        self.run_args(std::env::args_os(), true)
    }

    /// [`run`](Self::run) on `args` (the program's name first), on the calling thread as it
    /// is (outside rayon's pool, as any thread that may end must be).
    pub fn run_on<I, T>(self, args: I) -> i32
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        self.run_args(args, false)
    }

    fn run_args<I, T>(self, args: I, join_pool: bool) -> i32
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        crate::sweep::runs_trials();
        let mut args = args.into_iter().map(Into::into).peekable();
        let name = self.name.clone().unwrap_or_else(|| {
            let first = args
                .peek()
                .map(std::path::PathBuf::from)
                .unwrap_or_default();
            let stem = first.file_stem().map(|s| s.to_string_lossy().into_owned());
            stem.unwrap_or_else(|| "tidemark".into())
        });
        let matches = match self.command_line(&name).try_get_matches_from(args) {
            Ok(matches) => matches,
            Err(e) => {
                let _ = e.print();
                return if e.use_stderr() { 2 } else { 0 };
            }
        };
        // A search joins once it knows it trains its trials in this process.
        match (join_pool, matches.subcommand_name()) {
            (true, Some("sweep")) => crate::backend::threads::join_later(),
            (true, _) => {
                crate::backend::join_compute_pool();
            }
            (false, _) => {}
        }
        if let Some((called, args)) = matches.subcommand() {
            if let Some(own) = self
                .commands
                .iter()
                .find(|c| c.command.get_name() == called)
            {
                return exit_code((own.run)(args));
            }
        }
        match Cli::from_arg_matches(&matches) {
            Ok(cli) => exit_code(run(&self.kinds, cli)),
            Err(e) => {
                let _ = e.print();
                2
            }
        }
    }

    /// tidemark's commands and the program's own, under the program's `name`.
    fn command_line(&self, name: &str) -> clap::Command {
        let mut command = Cli::command()
            .name(name.to_string())
            .bin_name(name.to_string());
        if name != "tidemark" {
            // The examples in the help are the program's commands.
            let examples = command.get_after_help().map(ToString::to_string);
            if let Some(examples) = examples {
                command = command.after_help(examples.replace("tidemark ", &format!("{name} ")));
            }
        }
        if let Some(about) = &self.about {
            command = command.about(about.clone());
        }
        for own in &self.commands {
            command = command.subcommand(own.command.clone());
        }
        command
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
                crate::cli::terminal::escaped(&e.to_string())
            );
            e.exit_code()
        }
    }
}
