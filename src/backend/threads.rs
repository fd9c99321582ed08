//! The thread a run's steps are called from, as one of the CPU backend's compute threads.
//!
//! flex runs its matrix products and large element-wise ops on rayon's global pool, and so
//! does the fused Adam. A thread outside the pool that starts such an op hands it to the
//! pool's workers and sleeps until they are done: two context switches an op, and on a
//! 2-core machine three threads (this one and two workers) for two cores. Made a worker
//! itself, the thread runs its share of each op and hands over nothing (as OpenMP's main
//! thread does for PyTorch): on a 2-core EPYC, W1's step is about 4% faster and the
//! quickstart's about 18%, and the process holds one packing buffer fewer (gemm keeps one per
//! thread that multiplies). The figures are in docs/performance.md ("Levers", 3: "The
//! training thread joins the pool").

use std::sync::OnceLock;
use std::thread::ThreadId;

/// Makes the calling thread worker 0 of rayon's global pool, for the life of the process,
/// with the pool's size unchanged (`RAYON_NUM_THREADS`, else one thread a core): the pool
/// starts one thread fewer. Call it first in `main`, before anything uses rayon;
/// [`App::run`](crate::App::run) does, in every command but `sweep`, and in `sweep` once its
/// search turns out to train its trials in its own process, one at a time. A program that
/// runs searches with trials in parallel leaves it out: the search sizes its children's
/// leases for a searching thread outside the pool (docs/search.md).
///
/// Returns whether it did. It does not when the pool would have a single thread (that
/// thread would then be the only one to run what other threads hand to the pool, and it
/// runs such work only while it waits inside rayon itself: a loader thread's parallel op
/// could wait for a training thread that waits for the loader), nor when the global pool is
/// already built, nor on a thread that is already a worker. With two threads or more, what
/// other threads hand to the pool runs on the other workers; only a `rayon::broadcast` from
/// another thread waits for this one to enter rayon. A run's warm-up broadcasts (so that every
/// worker's packing buffer is in its baseline), so call this only on the thread that trains:
/// a run on another thread, while this one waits on it or on anything but rayon, would wait
/// for ever.
///
/// ```
/// // A program of its own that trains through the library, in `main`:
/// let joined = tidemark::backend::join_compute_pool();
/// assert_eq!(joined, rayon::current_thread_index() == Some(0));
/// ```
pub fn join_compute_pool() -> bool {
    let variable = |name| std::env::var(name).ok();
    let threads = pool_size(
        variable("RAYON_NUM_THREADS").as_deref(),
        variable("RAYON_RS_NUM_CPUS").as_deref(),
    );
    threads >= 2
        && rayon::ThreadPoolBuilder::new()
            .use_current_thread()
            .build_global()
            .is_ok()
}

/// The thread that may join the pool later, once it knows it trains there
/// ([`join_later`]).
static LATER: OnceLock<ThreadId> = OnceLock::new();

/// Lets the calling thread join the pool later, through [`join_if_training_here`]: for a
/// command that learns whether it trains on this thread only from its config (`sweep`). Set
/// by [`App::run`](crate::App::run) only; a library program's threads never join unless it
/// calls [`join_compute_pool`] itself.
pub(crate) fn join_later() {
    let _ = LATER.set(std::thread::current().id());
}

/// [`join_compute_pool`], where the calling thread is the one [`join_later`] was called on
/// (the command line's, which trains here: a search's trials in its own process, one at a
/// time). Call it before anything that trains uses rayon; whether it joined.
pub(crate) fn join_if_training_here() -> bool {
    LATER.get() == Some(&std::thread::current().id()) && join_compute_pool()
}

/// The size rayon gives its global pool (rayon-core's `get_num_threads`): `RAYON_NUM_THREADS`
/// when it is a number above 0, else the older `RAYON_RS_NUM_CPUS` likewise, else the cores
/// this process may use.
fn pool_size(threads: Option<&str>, cpus: Option<&str>) -> usize {
    let cores = || std::thread::available_parallelism().map_or(1, |n| n.get());
    match threads.and_then(|v| v.parse::<usize>().ok()) {
        Some(0) => cores(),
        Some(n) => n,
        None => match cpus.and_then(|v| v.parse::<usize>().ok()) {
            Some(n) if n > 0 => n,
            _ => cores(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::pool_size;

    #[test]
    fn the_pool_size_is_the_one_rayon_gives() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(pool_size(Some("3"), None), 3);
        assert_eq!(pool_size(Some("1"), Some("4")), 1);
        assert_eq!(pool_size(Some("0"), Some("4")), cores);
        assert_eq!(pool_size(Some(" 2"), None), cores);
        assert_eq!(pool_size(Some("two"), Some("5")), 5);
        assert_eq!(pool_size(None, Some("0")), cores);
        assert_eq!(pool_size(None, None), cores);
    }
}
