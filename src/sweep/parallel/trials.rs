//! What a trial's child process runs: which binary, and how many rayon workers each.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, SweepError};

/// Rayon workers per child: the cores shared among the children, at least one each; `None`
/// where the environment sets `RAYON_NUM_THREADS` itself.
pub(in crate::sweep) fn threads_per_child(parallel: usize) -> Option<usize> {
    if std::env::var_os("RAYON_NUM_THREADS").is_some() {
        return None;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    Some((cores / parallel).max(1))
}

/// Whether this program's command line is a [`App`](crate::App)'s (the `tidemark` binary,
/// or a program of its own with its model kinds): its children run `<this program> trial`.
static RUNS_TRIALS: AtomicBool = AtomicBool::new(false);

/// Says that this program runs `trial LAUNCH_FILE` as an [`App`](crate::App) does: a
/// parallel search's children run this program, with its model kinds.
pub fn runs_trials() {
    RUNS_TRIALS.store(true, Ordering::SeqCst);
}

/// The program the children run: `TIDEMARK_BIN`, or this process's own where it runs trials
/// (an app's command line), run as `/proc/self/exe`, the file it was started from even if a
/// rebuild has replaced it since. A program that searches in parallel through the library
/// sets the former to an app built on [`App`](crate::App) with its kinds.
pub(in crate::sweep) fn trial_exe() -> Result<PathBuf, Error> {
    if let Some(bin) = std::env::var_os("TIDEMARK_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let exe =
        std::env::current_exe().map_err(|e| Error::io(Path::new("the running program"), e))?;
    let name = exe.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    match RUNS_TRIALS.load(Ordering::SeqCst) || name.starts_with("tidemark") {
        true => Ok(PathBuf::from("/proc/self/exe")),
        false => Err(Error::Sweep(SweepError::Plan {
            origin: exe.display().to_string(),
            message: "sweep.parallel: trials in parallel run in child processes of a program \
                      whose command line is tidemark::App (the tidemark binary, or an \
                      app's with its model kinds), and this program is not one; set \
                      TIDEMARK_BIN to such a program"
                .into(),
        })),
    }
}
