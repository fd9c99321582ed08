//! A run's compute threads: the thread that calls the steps is one of rayon's workers
//! (`backend::join_compute_pool`), so a run on flex holds the pool's threads and no more; a
//! search's process stays apart from the pool (its leases are sized for that).

use std::process::Stdio;

use super::*;

/// `tidemark COMMAND` on the small config with `RAYON_NUM_THREADS=threads`, held stopped
/// (SIGSTOP, by itself) before its first run's summary: the threads it holds there. It then
/// goes on, and must finish.
fn threads_before_the_summary(env: &Env, command: &str, threads: usize) -> usize {
    let name = format!("run.name=threads-{command}-{threads}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args([command, "--config", "small.toml", "--set", &name])
        // No loader threads: the count is the training thread and rayon's.
        .args(["--set", "data.num_workers=0", "--set", "train.epochs=1"])
        .current_dir(env.path(""))
        .env("RAYON_NUM_THREADS", threads.to_string())
        .env("TIDEMARK_FAILPOINT", "summary:1:STOP")
        .env(
            "TIDEMARK_FAILPOINT_COUNT",
            env.path(&format!("count-{command}-{threads}")),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let what = format!("{command} (RAYON_NUM_THREADS={threads}) stopped before its summary");
    wait_for(&mut child, &what, || {
        (process_state(pid) == Some('T')).then_some(())
    });
    // Counted, then continued before anything is asserted: a stopped run is never left behind.
    let held = std::fs::read_dir(format!("/proc/{pid}/task")).map(|tasks| tasks.count());
    let resumed = Command::new("kill")
        .args(["-CONT", &pid.to_string()])
        .status();
    assert!(resumed.unwrap().success());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{command}, RAYON_NUM_THREADS={threads}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    held.unwrap()
}

#[test]
fn the_training_thread_is_one_of_the_pools_threads_unless_the_pool_has_one_or_it_searches() {
    let env = Env::small();
    let held = |command, threads| threads_before_the_summary(&env, command, threads);
    // A pool of one thread is left as it was: that thread apart from the training thread, so
    // that work other threads hand to the pool never waits for the training thread. A pool of
    // three has the training thread as one of its three: one thread more than a pool of one
    // (a training thread that hands each parallel op to the pool would make it two).
    let (one, three) = (held("train", 1), held("train", 3));
    assert_eq!(
        three - one,
        1,
        "train: {one} threads with a pool of one, {three} with three"
    );
    // A search (here its trials in its own process, one at a time) keeps its thread apart.
    let (one, three) = (held("sweep", 1), held("sweep", 3));
    assert_eq!(
        three - one,
        2,
        "sweep: {one} threads with a pool of one, {three} with three"
    );
}
