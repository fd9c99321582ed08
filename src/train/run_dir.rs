//! The run directory: created fresh for every run (never over another's files), with the
//! resolved `config.toml` first.

use std::path::{Path, PathBuf};

use crate::config::TASK_SECTIONS;
use crate::config::{to_toml, RunConfig};
use crate::error::{Error, UsageError};
use crate::record::write_atomic;

/// An exclusive lock on a run's directory, held while a process trains the run
/// ([`Trainer::exclusive`](crate::Trainer::exclusive)), so that a second `train --resume` of it
/// is refused instead of writing, renaming and deleting the same checkpoints. It is the directory's own (`flock` on it): it writes nothing in the run, and
/// goes with the process, however it ends.
pub(in crate::train) struct RunLock(#[allow(dead_code)] nix::fcntl::Flock<std::fs::File>);

/// Takes `run_dir`'s [`RunLock`]; refused where another process holds it.
pub(in crate::train) fn lock(run_dir: &Path) -> Result<RunLock, Error> {
    use nix::fcntl::{Flock, FlockArg};
    let dir = std::fs::File::open(run_dir).map_err(|e| Error::io(run_dir, e))?;
    match Flock::lock(dir, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Ok(RunLock(lock)),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Err(UsageError::new(
            run_dir.display().to_string(),
            "another process is training this run (it holds the directory's lock); wait for \
             it to end, or stop it, before resuming: two would overwrite each other's \
             checkpoints",
        )
        .into()),
        Err((_, errno)) => Err(Error::io(run_dir, std::io::Error::from(errno))),
    }
}

/// The first line of a `config.toml` written for a task defined in code.
const CODE_TASK_HEADER: &str = "# model and data: task";

/// The name of the task a run's `config.toml` (`text`) says was defined in code, if it says so.
pub(crate) fn code_task(text: &str) -> Option<&str> {
    let first = text.lines().next()?;
    let rest = first.strip_prefix(CODE_TASK_HEADER)?;
    Some(rest.split(',').next().unwrap_or_default().trim())
}

/// `<output_dir>/<name>`, or `<name>-2`, `-3`, ... if that exists: a run never writes over
/// another run's files.
pub(crate) fn create(output_dir: &Path, name: &str) -> Result<PathBuf, Error> {
    make_output_dir(output_dir)?;
    for n in 1.. {
        let dir = match n {
            1 => output_dir.join(name),
            n => output_dir.join(format!("{name}-{n}")),
        };
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io(&dir, e)),
        }
    }
    unreachable!("the loop returns")
}

/// Creates `run.output_dir` (`--out`) if it is not there. A file in its place is a bad
/// setting (exit 2) named as such, not the OS's "File exists".
pub(crate) fn make_output_dir(output_dir: &Path) -> Result<(), Error> {
    let file_in_the_way = output_dir
        .ancestors()
        .find(|p| p.exists())
        .filter(|p| !p.is_dir());
    if let Some(file) = file_in_the_way {
        return Err(Error::Usage(UsageError::new(
            file.display().to_string(),
            "a file, where a directory of runs is expected (set run.output_dir or --out to a \
             directory)",
        )));
    }
    std::fs::create_dir_all(output_dir).map_err(|e| Error::io(output_dir, e))
}

/// Writes `config.toml`. A `[model]` or `[data]` section the task does not read
/// ([`Task::config_sections`](crate::task::Task::config_sections): `owned`) says nothing about
/// the run, so it is left out: a kind with data of its own owns `[model]` alone. A task defined
/// in code (one without `[model]`; a hand loop's owns none) gets a comment naming it (`name`)
/// instead, which the commands that rebuild a run from its file read.
pub(super) fn write_config(
    run_dir: &Path,
    config: &RunConfig,
    name: &str,
    owned: &[&str],
) -> Result<(), Error> {
    let path = run_dir.join("config.toml");
    let text = match TASK_SECTIONS.iter().all(|s| owned.contains(s)) {
        true => to_toml(config),
        false => {
            let full: toml::Table = toml::from_str(&to_toml(config)).expect("config is TOML");
            let kept: toml::Table = full
                .into_iter()
                .filter(|(section, _)| {
                    !TASK_SECTIONS.contains(&section.as_str()) || owned.contains(&section.as_str())
                })
                .collect();
            let kept = toml::to_string(&kept).expect("a TOML table serialises");
            match owned.contains(&"model") {
                true => kept,
                false => format!("{CODE_TASK_HEADER} \"{name}\", defined in code\n{kept}"),
            }
        }
    };
    write_atomic(&path, text.as_bytes()).map_err(|e| Error::io(&path, e))
}
