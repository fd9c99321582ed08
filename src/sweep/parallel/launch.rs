//! One trial of a parallel search, in the child process that runs it (`tidemark trial
//! LAUNCH_FILE`). The search writes the trial's whole config, its lease as `memory.limit`
//! included, to `launch/trial-NNN.toml` in the sweep directory; the child trains it (or
//! resumes it from its latest checkpoint) in its own `trial-NNN/`, under the pruner's gate
//! for this run (`launch/trial-NNN.gate.json`), if the search prunes.
//!
//! Two guards keep a trial to one writer: the child holds an exclusive lock on
//! `launch/trial-NNN.lock` while it trains, so a second process on the same trial (a resumed
//! search while an orphaned child still runs) is refused; and the child stops when the
//! search's process is gone, so it is not left training alone ([`super::parent_death`]).

use std::fs::File;
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

use crate::config::{parse, to_toml, RunConfig};
use crate::error::{Error, SweepError};
use crate::kinds::Kinds;
use crate::record::{write_atomic, Observer, RunSummary};
use crate::sweep::prune::{GateSpec, ReadRecord};
use crate::sweep::space::Trial;
use crate::sweep::trial_config::set;
use crate::sweep::trial_run::train_or_resume;

/// Where trial `trial`'s launch file goes in the sweep directory `dir`.
pub(in crate::sweep) fn launch_path(dir: &Path, trial: &Trial) -> PathBuf {
    dir.join("launch").join(format!("{}.toml", trial.name()))
}

/// The pruner's gate for a child's run, beside its launch file.
fn gate_path(launch: &Path) -> PathBuf {
    launch.with_extension("gate.json")
}

/// Writes `cfg` with `memory.limit = limit` bytes (and `memory.on_limit = "fit"` if `fit`) as
/// trial `trial`'s launch file, with the pruner's `gate` for this run beside it, and returns
/// its path.
pub(in crate::sweep) fn write_launch(
    dir: &Path,
    trial: &Trial,
    cfg: &RunConfig,
    limit: u64,
    fit: bool,
    gate: Option<&GateSpec>,
) -> Result<PathBuf, Error> {
    let bytes = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut extra = vec![set("memory.limit", toml::Value::Integer(bytes))];
    if fit {
        extra.push(set("memory.on_limit", toml::Value::String("fit".into())));
    }
    let leased = parse(&to_toml(cfg), "config.toml", &extra)?;
    let path = launch_path(dir, trial);
    let folder = path.parent().expect("a launch file has a folder");
    std::fs::create_dir_all(folder).map_err(|e| Error::io(folder, e))?;
    write_atomic(&path, to_toml(&leased).as_bytes()).map_err(|e| Error::io(&path, e))?;
    GateSpec::write(gate, &gate_path(&path))?;
    Ok(path)
}

/// Trains the trial whose launch file is `launch`, in `<run.output_dir>/<run.name>`; the
/// median rule, if its gate asks for it without a record file, reads `study`'s.
pub fn run_child(
    kinds: &Kinds,
    launch: &Path,
    observer: Box<dyn Observer>,
    study: Option<ReadRecord>,
) -> Result<RunSummary, Error> {
    let cfg = crate::config::load(launch, &[])?;
    let _lock = lock(&launch.with_extension("lock"))?;
    super::parent_death::arm()?;
    let gate = GateSpec::read(&gate_path(launch))?;
    let run_dir = cfg.run.output_dir.join(&cfg.run.name);
    trial_beside(launch, &run_dir)?;
    let gate = gate.map(|g| g.for_run(&run_dir).into_gate_reading(study));
    train_or_resume(kinds, cfg, &run_dir, observer, gate, None)
}

/// Refuses a launch file whose run is not its trial's directory in its search's
/// (`<sweep>/launch/trial-007.toml` trains `<sweep>/trial-007`): the search writes each launch
/// file so, and a file edited to train elsewhere would resume, delete or write there.
fn trial_beside(launch: &Path, run_dir: &Path) -> Result<(), Error> {
    let sweep = launch.parent().and_then(Path::parent);
    let stem = launch.file_stem();
    let canonical = |p: &Path| p.canonicalize().ok();
    let at_home = match (sweep, stem, run_dir.parent(), run_dir.file_name()) {
        (Some(sweep), Some(stem), Some(parent), Some(name)) => {
            let parent = match parent.as_os_str().is_empty() {
                true => Path::new("."),
                false => parent,
            };
            let sweep = match sweep.as_os_str().is_empty() {
                true => Path::new("."),
                false => sweep,
            };
            name == stem && canonical(parent).is_some() && canonical(parent) == canonical(sweep)
        }
        _ => false,
    };
    if at_home {
        return Ok(());
    }
    Err(Error::Sweep(SweepError::Plan {
        origin: launch.display().to_string(),
        message: format!(
            "run.output_dir and run.name name {}, which is not this trial's directory beside \
             its launch file; nothing was read or changed",
            run_dir.display()
        ),
    }))
}

/// An exclusive lock on `path`, held until dropped; an error if another process holds it.
fn lock(path: &Path) -> Result<Flock<File>, Error> {
    // Opened, never truncated: a lock file holds nothing, and one put there is not emptied.
    let file =
        (File::options().create(true).append(true).open(path)).map_err(|e| Error::io(path, e))?;
    Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|_| {
        Error::Sweep(SweepError::Plan {
            origin: path.display().to_string(),
            message: "another process is training this trial (it holds this lock); stop it \
                      before resuming the search"
                .into(),
        })
    })
}
