//! A trial's process ends with the search that started it.
//!
//! The search names itself in the child's environment ([`SEARCH_PID`]). The child asks Linux
//! for a signal when its parent dies (`PR_SET_PDEATHSIG`): SIGTERM, whose default action ends
//! it at once, wherever it is. The kernel sends it however the search ended: SIGKILL, the
//! out-of-memory killer, an exit at a second signal, a panic. What the child leaves is what a
//! kill leaves: its latest checkpoint complete on disk (checkpoints are written atomically),
//! its lock released, and on a device with pools its memory taken back by the driver with the
//! process, so that `sweep --resume` goes on from there.
//!
//! No thread of the child's watches the parent, so none can die in its place: a watcher that
//! wrote to the dead search's stderr panicked alone, and left the child training (issue 38).
//!
//! Linux sends the signal when the *thread* that started the child ends. A search starts its
//! children from the thread it runs on, which waits for every child before it returns.
//! Elsewhere than Linux, a thread polls the parent every 500 ms instead.

use crate::error::Error;

/// The environment variable that holds the search's process id, for its children.
pub(in crate::sweep) const SEARCH_PID: &str = "TIDEMARK_SEARCH_PID";

/// Ends this process when its parent, the search, is gone, from now on; at once if the search
/// ended before this was armed (the process then has another parent already).
pub(in crate::sweep) fn arm() -> Result<(), Error> {
    #[cfg(target_os = "linux")]
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM).map_err(|e| {
        Error::io(
            std::path::Path::new("the parent-death signal (prctl)"),
            e.into(),
        )
    })?;
    let parent = std::os::unix::process::parent_id();
    let search = std::env::var(SEARCH_PID).ok().and_then(|p| p.parse().ok());
    // Another parent than the search is a wrapper (`TIDEMARK_BIN` a script that does not
    // exec); the search's process gone is what ends the child.
    if search.is_some_and(|search: u32| search != parent && !alive(search)) {
        gone();
    }
    #[cfg(not(target_os = "linux"))]
    std::thread::spawn(move || loop {
        std::thread::sleep(std::time::Duration::from_millis(500));
        if std::os::unix::process::parent_id() != parent {
            gone();
        }
    });
    Ok(())
}

/// Whether process `pid` exists (signal 0: nothing is sent; not ours to signal still exists).
fn alive(pid: u32) -> bool {
    let pid = nix::unistd::Pid::from_raw(pid as i32);
    !matches!(
        nix::sys::signal::kill(pid, None),
        Err(nix::errno::Errno::ESRCH)
    )
}

/// Says so where stderr still reads it (a closed one is no error here), and exits.
fn gone() -> ! {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "error: the search that started this trial is gone; stopped at the latest checkpoint"
    );
    std::process::exit(1)
}
