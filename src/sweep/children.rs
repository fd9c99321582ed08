//! The child processes of a parallel search: one `tidemark trial` each, started with its lease
//! as its memory limit and its share of the cores, watched until it exits, and stopped with
//! SIGTERM when the search is. A child's stderr is read as it comes, so that a failed child's
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

use crate::error::Error;

/// What starts a trial's child.
#[derive(Debug, Clone)]
pub(super) struct Launch {
    /// The `tidemark` binary.
    pub exe: PathBuf,
    /// The sweep directory.
    pub dir: PathBuf,
    /// Rayon workers per child; `None` keeps the environment's `RAYON_NUM_THREADS`.
    pub threads: Option<usize>,
    /// `memory.on_limit = "fit"` inside the lease (the trials leave it unset).
    pub fit: bool,
}

/// A running child.
pub(super) struct Child {
    process: std::process::Child,
    last_line: Option<JoinHandle<String>>,
}

impl Launch {
    /// Starts trial `number` with memory limit `limit`.
    pub fn start(&self, number: usize, limit: u64) -> Result<Child, Error> {
        let mut command = Command::new(&self.exe);
        command
            .arg("trial")
            .arg(&self.dir)
            .arg(number.to_string())
            .arg("--limit")
            .arg(limit.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if self.fit {
            command.arg("--fit");
        }
        if let Some(threads) = self.threads {
            command.env("RAYON_NUM_THREADS", threads.to_string());
        }
        let mut process = command.spawn().map_err(|e| Error::io(&self.exe, e))?;
        let stderr = process.stderr.take().expect("piped");
        let last_line = std::thread::spawn(move || last_line(BufReader::new(stderr)));
        Ok(Child {
            process,
            last_line: Some(last_line),
        })
    }
}

/// The last non-empty line `reader` gives, read to its end.
fn last_line(reader: impl BufRead) -> String {
    let mut last = String::new();
    for line in reader.lines().map_while(Result::ok) {
        if !line.trim().is_empty() {
            last = line;
        }
    }
    last
}

impl Child {
    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.process.id()
    }

    /// `Some(outcome)` once the child has exited: `Ok` for exit code 0, else its reason.
    pub fn exited(&mut self) -> Result<Option<Result<(), String>>, Error> {
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
        // A child that has exited already cannot be signalled; that is not an error here.
        let _ = kill(Pid::from_raw(self.pid() as i32), Signal::SIGTERM);
    }

    /// Waits for the child to exit, with its outcome.
    pub fn wait(&mut self) -> Result<(), String> {
        match self.process.wait() {
            Ok(status) => self.outcome(status),
            Err(e) => Err(format!("waiting for the trial's process: {e}")),
        }
    }

    fn outcome(&mut self, status: ExitStatus) -> Result<(), String> {
        let last = self
            .last_line
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let last = last.strip_prefix("error: ").unwrap_or(&last).to_string();
        match (status.code(), status.signal()) {
            (Some(0), _) => Ok(()),
            (Some(code), _) if last.is_empty() => Err(format!("exited with code {code}")),
            (Some(_), _) => Err(last),
            (None, Some(signal)) => Err(killed(signal, &last)),
            (None, None) => Err(format!("ended without an exit code: {status}")),
        }
    }
}

/// `killed by signal 9 (SIGKILL)`, with the child's last line if it said one.
fn killed(signal: i32, last: &str) -> String {
    let name = nix::sys::signal::Signal::try_from(signal)
        .map(|s| format!(" ({})", s.as_str()))
        .unwrap_or_default();
    match last.is_empty() {
        true => format!("killed by signal {signal}{name}"),
        false => format!("killed by signal {signal}{name}; its last line: {last}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_reason_is_its_last_line_or_its_signal() {
        assert_eq!(last_line("a\n\nerror: b\n\n".as_bytes()), "error: b");
        assert_eq!(killed(9, ""), "killed by signal 9 (SIGKILL)");
        assert_eq!(
            killed(15, "epoch 2"),
            "killed by signal 15 (SIGTERM); its last line: epoch 2"
        );
    }
}
