//! `tidemark sweep`: N runs of one config, or a search when the config has a `[sweep]` table
//! (shared by a study's workers, or a cluster's job array, when asked), and the table it
//! prints.

use std::path::{Path, PathBuf};

use super::load_file;
use super::terminal::{SweepTerminal, Terminal};
use crate::config::{ClearPolicy, Override, RawFile, RunConfig};
use crate::kinds::Kinds;
use crate::record::Observer;
use crate::sweep::{Changes, Shard, Space, Swept, TrialStatus};
use crate::Error;

/// `tidemark sweep`'s arguments.
pub(super) struct SweepArgs {
    pub path: PathBuf,
    pub overrides: Vec<String>,
    pub runs: Option<usize>,
    pub resume: Option<PathBuf>,
    pub out: Vec<Override>,
    pub verbose: bool,
    pub shard: Option<String>,
    pub shards: Option<usize>,
    pub parallel: Option<usize>,
    pub storage: Option<String>,
}

/// Runs the sweep, and prints its table and one-line outcome.
pub(super) fn run(kinds: &Kinds, mut args: SweepArgs) -> Result<(), Error> {
    let out = std::mem::take(&mut args.out);
    // One read of the file gives the run's config and the search's table.
    let (file, resolved) = load_file(kinds, &args.path, &args.overrides, out)?;
    let verbose = args.verbose;
    let observer = |run, runs| -> Box<dyn Observer> {
        Box::new(SweepTerminal {
            run,
            runs,
            inner: Terminal::new(!verbose),
        })
    };
    let (dir, swept) = match &args.resume {
        Some(dir) => {
            let overrides = (args.overrides.iter())
                .map(|o| Override::parse(o))
                .collect::<Result<Vec<_>, _>>()?;
            let mut changes = Changes::of(&overrides)?;
            changes.parallel = args.parallel.or(changes.parallel);
            // The search is its journal's; the config's [sweep] keys are --set's changes.
            drop(file);
            crate::sweep::resume_sweep(kinds, dir, &resolved, args.runs, changes, observer)?
        }
        None => match search_space(file, args.runs, args.parallel)? {
            Some(space) => {
                let shard = match &args.storage {
                    Some(_) => None,
                    None => shard(args.shard.as_deref(), args.shards)?,
                };
                let storage = match (shard, &args.storage) {
                    (Some(_), _) => Some(shard_study(kinds, &resolved, &space)?),
                    (None, storage) => storage.clone(),
                };
                let (dir, rows) = match storage {
                    Some(storage) => {
                        crate::sweep::work_on_study(kinds, &resolved, &space, &storage, observer)
                            .map_err(|e| match e {
                                Error::Interrupted => Error::WorkerStopped {
                                    rejoin: this_command(),
                                },
                                e => e,
                            })?
                    }
                    None => crate::sweep::search(kinds, &resolved, &space, observer)?,
                };
                let (monitor, mode) = (space.monitor.name().to_string(), space.monitor.mode());
                (
                    dir,
                    Swept::Search {
                        rows,
                        monitor,
                        mode,
                    },
                )
            }
            None => {
                plain_runs_take_no_search_flag(&args)?;
                let runs = args.runs.unwrap_or(5);
                let (dir, rows) = crate::sweep::sweep(kinds, &resolved, runs, observer)?;
                (dir, Swept::Runs(rows))
            }
        },
    };
    print_sweep(&dir, &swept, &resolved);
    // A search that found nothing is not a success, though each failure is recorded.
    let (Swept::Search { rows, .. } | Swept::Runs(rows)) = &swept;
    crate::sweep::none_completed(rows).map_or(Ok(()), Err)
}

/// This process's command line, as a shell would take it again.
fn this_command() -> String {
    let quote = |arg: String| {
        let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,@+%".contains(c);
        match !arg.is_empty() && arg.chars().all(plain) {
            true => arg,
            false => format!("'{}'", arg.replace('\'', "'\\''")),
        }
    };
    std::env::args().map(quote).collect::<Vec<_>>().join(" ")
}

/// This process's shard: `--shard`'s, or the scheduler's (Slurm, Kubernetes), or none.
fn shard(flag: Option<&str>, shards: Option<usize>) -> Result<Option<Shard>, Error> {
    match flag {
        Some(text) => Ok(Some(Shard::parse(text)?)),
        None => Ok(Shard::from_env(|name| std::env::var(name).ok(), shards)?),
    }
}

/// Shard `I/N` of a search (`--shard`, or a Slurm or Kubernetes job array's task) as a worker
/// of the study in its sweep directory, `<output_dir>/<name>-sweep/journal.log`, which every
/// task of the array shares: each worker takes the study's next trial, as `--storage` workers
/// do, rather than a fixed share of the trials. Returns the storage, its directory made.
fn shard_study(kinds: &Kinds, config: &RunConfig, space: &Space) -> Result<String, Error> {
    // Checked before the directory is made: a refused search leaves nothing behind.
    crate::sweep::check_search(kinds, config, space)?;
    let dir = (config.run.output_dir).join(format!("{}-sweep", config.run.name));
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    // The sweep directory comes from a config, which holds text only.
    Ok(crate::config::path_text(
        "the sweep directory",
        &dir.join("journal.log"),
    )?)
}

/// Refuses `--shard`, `--shards`, `--parallel` and `--storage` without a `[sweep]` table: the
/// runs of one config run one after another and share no study, so every task of a cluster's
/// array or every worker would train every run.
fn plain_runs_take_no_search_flag(args: &SweepArgs) -> Result<(), Error> {
    let (flag, only) = match (&args.shard, args.shards, args.parallel, &args.storage) {
        (Some(text), ..) => (
            format!("--shard {text}"),
            "are shared by a job array's tasks",
        ),
        (None, Some(n), ..) => (format!("--shards {n}"), "are shared by a job array's tasks"),
        (None, None, Some(n), _) => (format!("--parallel {n}"), "run in parallel"),
        (None, None, None, Some(s)) => (format!("--storage {s}"), "are shared through a study"),
        (None, None, None, None) => return Ok(()),
    };
    Err(Error::Usage(crate::error::UsageError::new(
        flag,
        format!(
            "{} has no [sweep] table, and only a search's trials {only}; without one, sweep \
             trains --runs N runs of the config one after another in one process",
            args.path.display()
        ),
    )))
}

/// The search `file`'s `[sweep]` table describes (`parallel` trials at once where
/// `--parallel` says), or `None` without one; `--runs` with a table is refused.
pub(super) fn search_space(
    mut file: RawFile,
    runs: Option<usize>,
    parallel: Option<usize>,
) -> Result<Option<Space>, Error> {
    let Some(sweep) = file.raw.sweep.as_mut() else {
        return Ok(None);
    };
    if runs.is_some() {
        return Err(Error::Config(
            file.error(
                "sweep",
                "--runs repeats one config, and this file has a [sweep] table: its trials come \
             from the table (sweep.trials for a random search)"
                    .into(),
            ),
        ));
    }
    if let Some(parallel) = parallel {
        sweep.parallel = Some(parallel as i64);
    }
    Ok(Space::of_file(&file)?)
}

/// A sweep's table and its one-line outcome.
fn print_sweep(dir: &Path, swept: &Swept, config: &RunConfig) {
    let clear = match config.memory.clear {
        ClearPolicy::Never => "never",
        ClearPolicy::BetweenRuns => "between_runs",
        ClearPolicy::EveryEpoch => "every_epoch",
    };
    match swept {
        Swept::Runs(rows) => {
            outln!("{}", crate::sweep::runs_table(rows));
            let left = (rows.iter()).filter(|r| r.status != TrialStatus::Completed);
            let failed = match left.count() {
                0 => String::new(),
                n => format!(" ({n} did not complete)"),
            };
            outln!(
                "sweep: {} runs{failed} with memory.clear = \"{clear}\"; {}",
                rows.len(),
                dir.display()
            );
        }
        Swept::Search {
            rows,
            monitor,
            mode,
        } => {
            let width = terminal_width();
            match width {
                Some(width) => out!(
                    "{}",
                    crate::sweep::compact(rows, (monitor, *mode), dir, width)
                ),
                None => out!("{}", crate::sweep::ranking(rows, monitor, *mode, dir)),
            }
            if let Some(schedule) = crate::sweep::schedule_text(rows) {
                out!("\n{schedule}");
            }
            let count = |status| rows.iter().filter(|r| r.status == status).count();
            let pruned = match count(TrialStatus::Pruned) {
                0 => String::new(),
                n => format!(", {n} pruned"),
            };
            let line = format!(
                "sweep: {} trials ({} failed{pruned}) with memory.clear = \"{clear}\"",
                rows.len(),
                count(TrialStatus::Failed),
            );
            let place = format!("; {}", dir.display());
            outln!("{}", last_line(&line, &place, width));
        }
    }
}

/// A search's last line: `line` and the sweep directory's `place`, on a terminal of `width`
/// columns without the place where it does not fit (the compact ranking named it) and cut to
/// the width, as every line of a search's end is; piped, whole.
fn last_line(line: &str, place: &str, width: Option<usize>) -> String {
    let Some(width) = width else {
        return format!("{line}{place}");
    };
    let whole = format!("{line}{place}");
    let shown = match console::measure_text_width(&whole) <= width {
        true => whole,
        false => line.to_string(),
    };
    console::truncate_str(&shown, width.max(1), "…").into_owned()
}

/// The width of the terminal stdout is, if it is one: a search's end is then the compact
/// ranking, else the full one that scripts read.
fn terminal_width() -> Option<usize> {
    let term = console::Term::stdout();
    match term.is_term() {
        true => Some(term.size().1 as usize),
        false => None,
    }
}

/// `tidemark report SWEEP_DIR` for a search: every trial, whichever worker trained it, ranked
/// from its study's journal; writes the views (`plan.json`, `sweep.md`, `sweep.json`, ...).
pub(super) fn report(dir: &Path) -> Result<(), Error> {
    let (rows, plan) = crate::sweep::merge(dir)?;
    out!(
        "{}",
        crate::sweep::ranking(&rows, &plan.monitor, plan.mode, dir)
    );
    if let Some(schedule) = crate::sweep::schedule_text(&rows) {
        out!("\n{schedule}");
    }
    if plan.is_repeat() {
        out!("\n{}", crate::sweep::runs_table(&rows));
    }
    let count = |status| rows.iter().filter(|r| r.status == status).count();
    outln!(
        "report: {} trials: {} completed, {} pruned, {} failed, {} not run yet; wrote {}",
        rows.len(),
        count(TrialStatus::Completed),
        count(TrialStatus::Pruned),
        count(TrialStatus::Failed),
        count(TrialStatus::NotRun),
        dir.join("sweep.md").display()
    );
    Ok(())
}

/// Whether `report`'s argument is a search's sweep directory: its journal (or, for a worker of
/// a shared study, the `study.json` that names the study's storage), or a plan it shows.
pub(super) fn is_sweep_dir(dir: &Path) -> bool {
    ["journal.log", "study.json", "plan.json"]
        .iter()
        .any(|name| dir.join(name).is_file())
}

/// Whether `report`'s argument names a study's storage: `redis://...`, or a file whose first
/// line is a journal's record (any other file is "not a run directory").
pub(super) fn is_study(path: &Path) -> bool {
    if path.starts_with("redis:") {
        return true;
    }
    let Ok(file) = std::fs::File::open(path).and_then(|f| f.metadata().map(|m| (f, m))) else {
        return false;
    };
    let mut first = String::new();
    let read = std::io::BufRead::read_line(&mut std::io::BufReader::new(file.0), &mut first);
    file.1.is_file() && read.is_ok() && first.starts_with('{') && first.contains("\"op_code\"")
}

/// `tidemark report JOURNAL`: every study in a journal, ranked from the journal alone.
pub(super) fn report_study(journal: &Path) -> Result<(), Error> {
    let spec = journal.display().to_string();
    let reports = crate::sweep::report_study(&spec)?;
    if reports.is_empty() {
        return Err(Error::Usage(crate::error::UsageError::new(
            spec,
            "holds no study of tidemark's (a journal written by sweep --storage)",
        )));
    }
    for study in reports {
        // The best trial's directory, where its worker trained it.
        let best = study.rows.iter().find(|r| r.rank == Some(1));
        let run_dir = best
            .and_then(|r| r.memory.as_ref())
            .map(|m| m.run_dir.clone());
        let dir = run_dir
            .as_deref()
            .and_then(Path::parent)
            .unwrap_or(Path::new("."));
        out!(
            "{}",
            crate::sweep::ranking(&study.rows, &study.monitor, study.mode, dir)
        );
        if let Some(schedule) = crate::sweep::schedule_text(&study.rows) {
            out!("\n{schedule}");
        }
        let count = |status| study.rows.iter().filter(|r| r.status == status).count();
        outln!(
            "report: study {}: {} trials: {} completed, {} running on {} workers, {} pruned, \
             {} failed, {} not run yet",
            study.name,
            study.rows.len(),
            count(TrialStatus::Completed),
            count(TrialStatus::Running),
            study.workers.len(),
            count(TrialStatus::Pruned),
            count(TrialStatus::Failed),
            count(TrialStatus::NotRun)
        );
    }
    Ok(())
}

/// `tidemark trial LAUNCH_FILE`: one trial of a parallel search or of a worker packing its
/// device, quiet, in its child process.
pub(super) fn trial(kinds: &Kinds, launch: &Path) -> Result<(), Error> {
    crate::sweep::trial_child(kinds, launch, Box::new(Terminal::new(true))).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::last_line;

    #[test]
    fn a_search_s_last_line_fits_the_terminal() {
        let line = "sweep: 40 trials (0 failed) with memory.clear = \"between_runs\"";
        let place = "; runs/p-sweep";
        assert_eq!(last_line(line, place, None), format!("{line}{place}"));
        assert_eq!(last_line(line, place, Some(200)), format!("{line}{place}"));
        assert_eq!(last_line(line, place, Some(70)), line);
        for width in [1, 40] {
            let cut = last_line(line, place, Some(width));
            assert_eq!(console::measure_text_width(&cut), width, "{cut}");
            assert!(cut.ends_with('…'), "{cut}");
        }
        // Wide characters count by the columns they take.
        let wide = "; runs/\u{6a21}\u{578b}\u{6a21}\u{578b}-sweep";
        let cut = last_line(line, wide, Some(75));
        assert!(console::measure_text_width(&cut) <= 75, "{cut}");
    }
}
