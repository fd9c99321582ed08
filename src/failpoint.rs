//! Named moments at which a test stops a search, to prove that a search killed anywhere loses
//! nothing (`tests/cli/kill_anywhere.rs`). Inert unless `TIDEMARK_FAILPOINT` is set, and then
//! one comparison of a name per moment passed.
//!
//! `TIDEMARK_FAILPOINT=NAME:N:SIGNAL` sends SIGNAL (`KILL`, `TERM` or `STOP`) to the search's
//! process the `N`-th time any process of the search passes moment `NAME`: from a trial's
//! child, the search that started it (`TIDEMARK_SEARCH_PID`); otherwise this process. The
//! passes are counted in the file `TIDEMARK_FAILPOINT_COUNT` (one byte appended per pass, under
//! a lock), so that the count spans the search and its children.
//!
//! The moments: `probe` (before a trial's probe), `start` (before a trial trains or its
//! child starts), `step` (after an optimizer step), `snapshot` (after an epoch's snapshot,
//! before its checkpoint), `checkpoint` (after it, before the pruner's gate), `summary`
//! (before a run's `summary.json`), `summarised` (after it), `ended` (after the search, or a
//! study's worker, recorded a trial's end, before its next decision), `results` (before
//! `sweep.json`) and `append` (half-way through writing a record to a study's journal file).
//!
//! `STOP` holds a process still where it stands: `scripts/gpu-peers.sh` stops a run at
//! `summary`, after its memory was released, to read what the GPU's driver says the process
//! still holds, then continues it with SIGCONT.

use std::fs::OpenOptions;
use std::io::Write;
use std::sync::OnceLock;

use nix::fcntl::{Flock, FlockArg};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// The armed moment: its name, the pass that fires, the signal, and the counting file.
struct Armed {
    name: String,
    pass: u64,
    signal: Signal,
    count: String,
}

fn armed() -> Option<&'static Armed> {
    static ARMED: OnceLock<Option<Armed>> = OnceLock::new();
    ARMED.get_or_init(parse).as_ref()
}

fn parse() -> Option<Armed> {
    let text = std::env::var("TIDEMARK_FAILPOINT").ok()?;
    let count = std::env::var("TIDEMARK_FAILPOINT_COUNT").ok()?;
    let mut parts = text.split(':');
    let (name, pass, signal) = (parts.next()?, parts.next()?, parts.next()?);
    let signal = match signal {
        "KILL" => Signal::SIGKILL,
        "TERM" => Signal::SIGTERM,
        "STOP" => Signal::SIGSTOP,
        _ => return None,
    };
    Some(Armed {
        name: name.to_string(),
        pass: pass.parse().ok()?,
        signal,
        count,
    })
}

/// Whether moment `name` is the armed one: a moment that takes work to reach (half a record
/// written) is staged only then.
pub(crate) fn armed_at(name: &str) -> bool {
    armed().is_some_and(|a| a.name == name)
}

/// Passes moment `name`: where it is the armed moment's `N`-th pass, the search is signalled.
pub(crate) fn pass(name: &str) {
    let Some(armed) = armed().filter(|a| a.name == name) else {
        return;
    };
    if counted(&armed.count) != Some(armed.pass) {
        return;
    }
    let search = std::env::var("TIDEMARK_SEARCH_PID")
        .ok()
        .and_then(|p| p.parse::<i32>().ok())
        .unwrap_or(std::process::id() as i32);
    let _ = kill(Pid::from_raw(search), armed.signal);
}

/// Appends this pass to the counting file; returns its number (1 for the first).
fn counted(path: &str) -> Option<u64> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .ok()?;
    let mut file = Flock::lock(file, FlockArg::LockExclusive).ok()?;
    let before = file.metadata().ok()?.len();
    file.write_all(b".").ok()?;
    Some(before + 1)
}
