//! The command line: `train`, `evaluate`, `predict`, `sweep`, `compare`, `report` and
//! `validate`. Thin: it parses
//! arguments, calls the library, prints, and returns an exit code.

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};

use crate::config::{self, Override, RunConfig};
use crate::kinds::Kinds;
use crate::Error;

/// `println!` to stdout with control characters shown escaped ([`terminal::escaped`]): what a
/// command prints holds names and paths the user chose.
macro_rules! outln {
    ($($arg:tt)*) => {
        println!("{}", $crate::cli::terminal::escaped(&format!($($arg)*)))
    };
}

/// `print!`, escaped as [`outln!`].
macro_rules! out {
    ($($arg:tt)*) => {
        print!("{}", $crate::cli::terminal::escaped(&format!($($arg)*)))
    };
}

mod compare;
mod draw;
mod inference;
mod leases;
mod lr_find;
mod sweep;
pub(crate) mod terminal;
mod train;
mod validate;

use train::train;

/// Train models on Burn with memory you can see: every run writes a memory snapshot per
/// epoch to <output_dir>/<run.name>/snapshots.jsonl.
#[derive(Debug, Parser)]
#[command(name = "tidemark", version, about, long_about = None)]
#[command(
    after_help = "Examples:\n  tidemark train --config configs/quickstart.toml\n  \
    tidemark train --config configs/quickstart.toml --set train.batch_size=64 --set train.accumulation_steps=4\n  \
    tidemark train --resume runs/quickstart --set train.epochs=8\n  \
    tidemark validate --config configs/accumulation.toml\n  \
    tidemark sweep --config configs/sweep.toml --runs 20\n  \
    tidemark compare --config configs/quickstart.toml --policies growth,preallocate,limit\n  \
    tidemark report runs/quickstart\n  \
    tidemark evaluate runs/recipe --checkpoint best\n  \
    tidemark predict runs/co2-lstm --data data/co2-weekly.csv --out forecast.csv\n\n\
    Exit codes: 0 success, 2 bad usage, config, device choice or data file, 3 memory limit \
    exceeded, device out of memory or no room for a memory lease, 4 training that could not go on (a diverged loss), 130 a \
    search stopped by a signal, 1 any other failure."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Train a model from a config file and write its run directory, or continue a run from
    /// its latest checkpoint (--resume).
    Train {
        /// The TOML config file (with --resume, the run's own config.toml if not given).
        #[arg(long, short, value_name = "FILE", required_unless_present = "resume")]
        config: Option<PathBuf>,
        /// Override any key, e.g. --set train.batch_size=64 (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        overrides: Vec<String>,
        /// Continue the run in RUN_DIR from its latest checkpoint, appending to its files;
        /// only where it writes and how long and in how much memory it trains may change
        /// (run.name, run.output_dir, train.epochs, train.gradient_checkpointing,
        /// [train.offload], data.num_workers, device.index, [memory], [checkpoint]).
        #[arg(long, value_name = "RUN_DIR")]
        resume: Option<PathBuf>,
        /// With --resume: --set may change how the optimizer steps too (train.lr,
        /// train.weight_decay, train.betas, train.eps, the clipping, train.ema.decay), from the
        /// next step on.
        #[arg(long, requires = "resume")]
        retune: bool,
        /// Directory that holds run directories (overrides run.output_dir).
        #[arg(long, value_name = "DIR", conflicts_with = "resume")]
        out: Option<PathBuf>,
        /// Print only the final summary.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Score a finished run's model on its validation split, or on a file laid out like its
    /// data, and write evaluation.json in the run directory.
    Evaluate {
        /// The run directory.
        #[arg(value_name = "RUN_DIR")]
        run_dir: PathBuf,
        /// A file laid out like the run's data, with its label or target column [default: the
        /// run's validation split].
        #[arg(long, value_name = "PATH")]
        data: Option<PathBuf>,
        /// best, latest, or a checkpoint directory such as epoch-3 [default: the run's final
        /// weights, as summary.json names them].
        #[arg(long, value_name = "NAME")]
        checkpoint: Option<String>,
    },
    /// Write a finished run's outputs for every input of a file, as CSV: the class and its
    /// probabilities, the predicted value, or a series' next values.
    Predict {
        /// The run directory.
        #[arg(value_name = "RUN_DIR")]
        run_dir: PathBuf,
        /// A file laid out like the run's data; the label or target column may be left out.
        #[arg(long, value_name = "PATH")]
        data: PathBuf,
        /// The CSV file to write.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// best, latest, or a checkpoint directory such as epoch-3 [default: the run's final
        /// weights].
        #[arg(long, value_name = "NAME")]
        checkpoint: Option<String>,
    },
    /// Search the config's [sweep] table: its trials ranked by their monitored value, one at
    /// a time or in parallel under memory leases, alone or as a worker of a shared study
    /// (--storage). Without a [sweep] table: train the config N times in one process and show
    /// what each run took and gave back under memory.clear.
    Sweep {
        /// The TOML config file (with --resume, the sweep's own config.toml if not given).
        #[arg(long, short, value_name = "FILE", required_unless_present = "resume")]
        config: Option<PathBuf>,
        /// Override any key, e.g. --set train.batch_size=64 (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        overrides: Vec<String>,
        /// Number of runs of the config, with seeds run.seed, run.seed + 1, ... [default: 5].
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        runs: Option<u32>,
        /// Continue the sweep in DIR at the first run that did not finish.
        #[arg(long, value_name = "DIR")]
        resume: Option<PathBuf>,
        /// Directory that holds the sweep directory (overrides run.output_dir).
        #[arg(long, value_name = "DIR", conflicts_with = "resume")]
        out: Option<PathBuf>,
        /// Show every run's epochs, not just one line per run.
        #[arg(long, short)]
        verbose: bool,
        /// Task I of a job array of N: a worker of the study in the sweep directory all tasks
        /// share (its journal.log), taking the study's next trial as it frees up; read from a
        /// Slurm job array or a Kubernetes Indexed Job when not given.
        #[arg(long, value_name = "I/N", conflicts_with_all = ["resume", "runs"])]
        shard: Option<String>,
        /// The number of tasks, where the scheduler gives only the index (a Kubernetes
        /// Indexed Job's JOB_COMPLETION_INDEX: the Job's completions).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        shards: Option<u32>,
        /// Run N of a search's trials at once, each in a child process under a memory lease
        /// within sweep.budget (overrides [sweep] parallel).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
        parallel: Option<u32>,
        /// Work on this search's study in STORAGE (a journal file every worker reads, or
        /// redis://HOST:PORT), each worker taking the next trial (docs/cluster.md).
        #[arg(long, value_name = "STORAGE", conflicts_with_all = ["resume", "runs", "shard", "shards"])]
        storage: Option<String>,
    },
    /// Find a learning rate: Lightning's finder on a copy of the config's run (the rate swept
    /// from --min-lr to --max-lr over --steps steps), its suggestion printed and written with
    /// a picture to OUTPUT_DIR/NAME-lr-find/. The run directory is not touched.
    LrFind {
        #[command(flatten)]
        config: ConfigArgs,
        /// Directory that holds the finder's directory (overrides run.output_dir).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// The first step's rate.
        #[arg(long, value_name = "LR", default_value_t = 1e-8)]
        min_lr: f64,
        /// The last step's rate.
        #[arg(long, value_name = "LR", default_value_t = 1.0)]
        max_lr: f64,
        /// Steps from one to the other.
        #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(2..))]
        steps: u32,
    },
    /// One trial of a parallel search, as the search's child process runs it.
    #[command(hide = true)]
    Trial {
        /// The launch file the search writes: the trial's config, its lease as memory.limit.
        launch: PathBuf,
    },
    /// Train the config under several memory policies and compare their cost in one table
    /// (compare.md, compare.json) and one chart (compare.svg).
    Compare {
        #[command(flatten)]
        config: ConfigArgs,
        /// Comma-separated: growth, preallocate, limit, shrink, never.
        #[arg(long, value_name = "LIST", default_value = "growth,preallocate,limit")]
        policies: String,
        /// Directory that holds the comparison directory (overrides run.output_dir).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Redraw a run's memory.svg from its snapshots and print a short summary of the run; for a
    /// search's sweep directory, rank every trial, whichever process or worker trained it.
    Report {
        /// A run directory; a search's sweep directory (every trial ranked); or a
        /// study's storage (sweep --storage), ranked from its journal alone.
        #[arg(value_name = "RUN_DIR")]
        run_dir: PathBuf,
    },
    /// List the memory leases of every tidemark run on this machine's devices (holders,
    /// sizes, ages, what each has used, who waits), or set a device's budget (--budget).
    Leases {
        /// Set a device's budget, for every tidemark run on it: DEVICE=SIZE (host=16GiB for
        /// flex, cuda-0=60GiB, wgpu-0=4GiB).
        #[arg(long, value_name = "DEVICE=SIZE")]
        budget: Option<String>,
    },
    /// Check a config file (and overrides) without training; prints the resolved config.
    Validate {
        #[command(flatten)]
        config: ConfigArgs,
    },
}

#[derive(Debug, Args)]
struct ConfigArgs {
    /// The TOML config file.
    #[arg(long, short, value_name = "FILE")]
    config: PathBuf,
    /// Override any key, e.g. --set train.batch_size=64 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
}

impl ConfigArgs {
    fn load(&self, kinds: &Kinds, extra: Vec<Override>) -> Result<RunConfig, Error> {
        load_config(kinds, &self.config, &self.overrides, extra)
    }
}

/// The config at `path` with `overrides` and `extra`, its model kind one of `kinds` and its
/// keys the kind's.
fn load_config(
    kinds: &Kinds,
    path: &Path,
    overrides: &[String],
    extra: Vec<Override>,
) -> Result<RunConfig, Error> {
    Ok(load_file(kinds, path, overrides, extra)?.1)
}

/// The file at `path` read once with `overrides` and `extra`: as read (for its `[sweep]`
/// table), and as the run's config ([`load_config`]'s).
fn load_file(
    kinds: &Kinds,
    path: &Path,
    overrides: &[String],
    extra: Vec<Override>,
) -> Result<(config::RawFile, RunConfig), Error> {
    let mut overrides = overrides
        .iter()
        .map(|o| Override::parse(o))
        .collect::<Result<Vec<_>, _>>()?;
    overrides.extend(extra);
    let file = config::load_raw(path, &overrides)?;
    let resolved = file.config(&|c| kinds.resolve(c))?;
    Ok((file, resolved))
}

pub(crate) fn run(kinds: &Kinds, cli: Cli) -> Result<(), Error> {
    match cli.command {
        Command::Compare {
            config,
            policies,
            out,
        } => compare::compare(kinds, config, &policies, out),
        Command::LrFind {
            config,
            out,
            min_lr,
            max_lr,
            steps,
        } => {
            let resolved = config.load(kinds, out_override(out)?)?;
            lr_find::lr_find(kinds, &resolved, (min_lr, max_lr, steps as usize))
        }
        Command::Evaluate {
            run_dir,
            data,
            checkpoint,
        } => inference::evaluate(kinds, &run_dir, data, checkpoint),
        Command::Predict {
            run_dir,
            data,
            out,
            checkpoint,
        } => inference::predict(kinds, &run_dir, &data, &out, checkpoint),
        Command::Report { run_dir } if sweep::is_sweep_dir(&run_dir) => sweep::report(&run_dir),
        Command::Report { run_dir } if sweep::is_study(&run_dir) => sweep::report_study(&run_dir),
        Command::Report { run_dir } => report_run(&run_dir),
        Command::Leases { budget } => leases::leases(budget.as_deref()),
        Command::Validate { config } => validate::validate(kinds, config),
        Command::Sweep {
            config,
            overrides,
            runs,
            resume,
            out,
            verbose,
            shard,
            shards,
            parallel,
            storage,
        } => sweep::run(
            kinds,
            sweep::SweepArgs {
                path: config_path(config, resume.as_deref())?,
                overrides,
                runs: runs.map(|n| n as usize),
                resume,
                out: out_override(out)?,
                verbose,
                shard,
                shards: shards.map(|n| n as usize),
                parallel: parallel.map(|n| n as usize),
                storage,
            },
        ),
        Command::Trial { launch } => sweep::trial(kinds, &launch),
        Command::Train {
            config,
            overrides,
            resume,
            retune,
            out,
            quiet,
        } => train(kinds, config, &overrides, (resume, retune), out, quiet),
    }
}

/// The config to load: `--config`'s, or else the `config.toml` in the directory `--resume`
/// names (clap requires one of them).
fn config_path(config: Option<PathBuf>, resume: Option<&Path>) -> Result<PathBuf, Error> {
    if let Some(path) = config {
        return Ok(path);
    }
    let dir = resume.unwrap_or(Path::new("."));
    let path = dir.join("config.toml");
    if !path.is_file() {
        return Err(crate::error::UsageError::new(
            format!("--resume {}", dir.display()),
            format!(
                "not a run or sweep directory: {} is missing",
                path.display()
            ),
        )
        .into());
    }
    // The run's own config, not one a link in the run leads to (and that the run would then
    // replace with a file of its own).
    if let Err(why) = crate::record::names::inside(dir, &path) {
        return Err(crate::error::UsageError::new(
            format!("--resume {}", dir.display()),
            format!("{}: {why}; nothing was read or changed", path.display()),
        )
        .into());
    }
    Ok(path)
}

/// `--out DIR` as the override of `run.output_dir` it stands for; a directory name that is not
/// UTF-8 is refused in one line (a config, where the run records it, holds text only).
fn out_override(out: Option<PathBuf>) -> Result<Vec<Override>, crate::config::ConfigError> {
    let Some(dir) = out else {
        return Ok(Vec::new());
    };
    let text = crate::config::path_text("--out", &dir)?;
    Ok(vec![Override {
        key: "run.output_dir".into(),
        value: toml::Value::String(text.clone()),
        text: format!("run.output_dir={text}"),
    }])
}

/// `tidemark report RUN_DIR` on one run: its records read (a damaged one is named, exit 2),
/// then `memory.svg` redrawn and the run described.
fn report_run(run_dir: &std::path::Path) -> Result<(), Error> {
    let path = run_dir.join("snapshots.jsonl");
    if !path.is_file() {
        return Err(Error::not_a_run(run_dir, &path));
    }
    let log = crate::record::read_snapshot_log(&path)?;
    // One that is there but cannot be read is an error, not a run that did not finish.
    let summary = crate::record::RunSummary::read(run_dir)?;
    out!("{}", crate::report::report(run_dir, (&path, log), summary)?);
    Ok(())
}
