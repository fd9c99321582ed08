//! The child processes of a parallel search: one `tidemark trial` each, started from its launch
//! file (its config with its lease as its memory limit) with its share of the cores, watched
//! until it exits, and stopped with SIGTERM (then SIGKILL, after a grace) when the search is. A child's stderr is read as it comes, so that a failed child's
//! last line can be its reason.
//!
//! Why processes: the allocator's count and the CubeCL pools belong to one process, a limit
//! in one trial cannot then be breached by its neighbours' allocations, and a process gives
//! back everything when it exits.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Error, SweepError};

/// What starts a trial's child.
#[derive(Debug, Clone)]
pub(in crate::sweep) struct Launch {
    /// The `tidemark` binary.
    pub exe: PathBuf,
    /// Rayon workers per child; `None` keeps the environment's `RAYON_NUM_THREADS`.
    pub threads: Option<usize>,
    /// The study's storage, which a child writes its epochs to: given in its environment
    /// ([`STUDY_STORAGE`]), so that a child writes to no other than its search's, whatever a
    /// file beside its launch file says.
    pub storage: String,
}

/// The variable that names, to a trial's child, the storage of the study that started it.
pub(in crate::sweep) const STUDY_STORAGE: &str = "TIDEMARK_STUDY_STORAGE";

/// A running child.
pub(in crate::sweep) struct Child {
    process: std::process::Child,
    last_line: Option<JoinHandle<String>>,
    reaped: bool,
}

/// How long a child asked to stop may take before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

impl Launch {
    /// Starts the trial whose launch file is `launch` (`tidemark trial LAUNCH_FILE`).
    pub fn start(&self, launch: &Path) -> Result<Child, Error> {
        let mut command = Command::new(&self.exe);
        command
            .arg("trial")
            .arg(launch)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        command.env(
            super::parent_death::SEARCH_PID,
            std::process::id().to_string(),
        );
        command.env(STUDY_STORAGE, &self.storage);
        if let Some(threads) = self.threads {
            command.env("RAYON_NUM_THREADS", threads.to_string());
        }
        let mut process = command.spawn().map_err(|e| {
            let trial = launch.file_stem().unwrap_or_default().to_string_lossy();
            Error::Sweep(SweepError::Child {
                trial: trial.into_owned(),
                message: format!("{}: {e}", self.exe.display()),
            })
        })?;
        let stderr = process.stderr.take().expect("piped");
        let last_line = std::thread::spawn(move || last_line(BufReader::new(stderr)));
        Ok(Child {
            process,
            last_line: Some(last_line),
            reaped: false,
        })
    }
}

/// What `reader` says last, read to its end: its error (the line `error: ...` with the
/// indented detail lines after it), or else its last line that says something (not a blank
/// one, nor a panic's `note:` about backtraces).
fn last_line(reader: impl BufRead) -> String {
    let (mut last, mut in_error) = (String::new(), false);
    for line in reader.lines().map_while(Result::ok) {
        if line.trim().is_empty() || line.starts_with("note: ") {
            continue;
        }
        if in_error && line.starts_with("  ") {
            last = format!("{last}\n{line}");
            continue;
        }
        in_error = line.starts_with("error: ");
        last = line;
    }
    last
}

impl Child {
    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.process.id()
    }

    /// `Some(outcome)` once the child has exited: `Ok` for exit code 0, else its reason.
    pub fn exited(&mut self) -> Result<Option<Result<(), ChildFailed>>, Error> {
        let status = self
            .process
            .try_wait()
            .map_err(|e| Error::io(Path::new("a trial's child process"), e))?;
        Ok(status.map(|status| self.outcome(status)))
    }

    /// Asks the child to stop (SIGTERM); it keeps its latest complete checkpoint.
    pub fn terminate(&self) {
        use nix::sys::signal::{kill, Signal};
        use nix::unistd::Pid;
        // A reaped child's pid may belong to another process by now.
        if self.reaped {
            return;
        }
        // One that has exited but is not reaped yet cannot be signalled: not an error here.
        let _ = kill(Pid::from_raw(self.pid() as i32), Signal::SIGTERM);
    }

    /// Stops the child: SIGTERM, then SIGKILL if it has not exited within [`STOP_GRACE`].
    pub fn stop(&mut self) {
        if self.reaped {
            return;
        }
        self.terminate();
        let start = Instant::now();
        while start.elapsed() < STOP_GRACE {
            if let Ok(Some(_)) = self.process.try_wait() {
                self.reaped = true;
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.process.kill();
        let _ = self.process.wait();
        self.reaped = true;
    }

    fn outcome(&mut self, status: ExitStatus) -> Result<(), ChildFailed> {
        self.reaped = true;
        let last = self
            .last_line
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let last = last.strip_prefix("error: ").unwrap_or(&last).to_string();
        match (status.code(), status.signal()) {
            (Some(0), _) => Ok(()),
            (Some(code), _) if last.is_empty() => Err(ChildFailed::Exited(code)),
            (Some(_), _) => Err(ChildFailed::Said(last)),
            (None, Some(signal)) => Err(ChildFailed::killed(signal, &last)),
            (None, None) => Err(ChildFailed::NoCode(status.to_string())),
        }
    }
}

/// Why a trial's child failed, as its trial's error says it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChildFailed {
    /// It exited with a code other than 0 and said nothing.
    #[error("exited with code {0}")]
    Exited(i32),
    /// Its last line on stderr (its error), without `error: `.
    #[error("{0}")]
    Said(String),
    /// A signal ended it: `killed by signal 9 (SIGKILL)`, with its last line if it said one.
    #[error("killed by signal {signal}{name}{last}")]
    Killed {
        /// The signal's number.
        signal: i32,
        /// ` (SIGKILL)`, where the number has a name.
        name: String,
        /// `; its last line: ...`, where it said one.
        last: String,
    },
    /// It ended with neither a code nor a signal.
    #[error("ended without an exit code: {0}")]
    NoCode(String),
}

impl ChildFailed {
    /// Ended by `signal`, having said `last` (or nothing).
    fn killed(signal: i32, last: &str) -> Self {
        ChildFailed::Killed {
            signal,
            name: nix::sys::signal::Signal::try_from(signal)
                .map(|s| format!(" ({})", s.as_str()))
                .unwrap_or_default(),
            last: match last.is_empty() {
                true => String::new(),
                false => format!("; its last line: {last}"),
            },
        }
    }
}

/// A child the search lets go of (a panic, an early return) is stopped, never left running.
impl Drop for Child {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_reason_is_its_last_line_or_its_signal() {
        assert_eq!(last_line("a\n\nerror: b\n\n".as_bytes()), "error: b");
        let panicked =
            "thread 'main' panicked at x.rs:1:1:\nboom\nnote: run with `RUST_BACKTRACE=1`\n";
        assert_eq!(last_line(panicked.as_bytes()), "boom");
        let killed = |signal, last| ChildFailed::killed(signal, last).to_string();
        assert_eq!(killed(9, ""), "killed by signal 9 (SIGKILL)");
        assert_eq!(
            killed(15, "epoch 2"),
            "killed by signal 15 (SIGTERM); its last line: epoch 2"
        );
    }

    #[test]
    fn a_child_s_error_is_its_headline_with_the_detail_after_it() {
        let said = "epoch 1\nerror: memory limit exceeded\n  by category: weights\n  raise it\n\n\
                    note: run with RUST_BACKTRACE=1\n";
        assert_eq!(
            super::last_line(said.as_bytes()),
            "error: memory limit exceeded\n  by category: weights\n  raise it"
        );
        // Indented lines that follow no error are lines like any other.
        assert_eq!(super::last_line("a\n  b\n".as_bytes()), "  b");
    }
}
