//! A run's compute threads: the thread that calls the steps is one of rayon's workers
//! (`backend::join_compute_pool`), so a run on flex holds the pool's threads and no more, and
//! so does a search that trains its trials in its own process; a search whose trials run in
//! parallel, in children, stays apart from the pool (their leases are sized for that).

use std::process::Stdio;

use super::*;

/// `tidemark COMMAND --config CONFIG` with `RAYON_NUM_THREADS=threads`, held stopped
/// (SIGSTOP, by itself or by its trial's child) before its first run's summary: the threads
/// it holds there. It then goes on, and must finish.
fn threads_before_the_summary(env: &Env, [command, config]: [&str; 2], threads: usize) -> usize {
    let case = format!("{command}-{}-{threads}", config.trim_end_matches(".toml"));
    let name = format!("run.name=threads-{case}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args([command, "--config", config, "--set", &name])
        // No loader threads: the count is the training thread and rayon's.
        .args(["--set", "data.num_workers=0", "--set", "train.epochs=1"])
        .current_dir(env.path(""))
        .env("RAYON_NUM_THREADS", threads.to_string())
        .env("TIDEMARK_FAILPOINT", "summary:1:STOP")
        .env(
            "TIDEMARK_FAILPOINT_COUNT",
            env.path(&format!("count-{case}")),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let what = format!("{command} {config} (RAYON_NUM_THREADS={threads}) stopped before a summary");
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
        "{command} {config}, RAYON_NUM_THREADS={threads}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    held.unwrap()
}

#[test]
fn the_training_thread_is_one_of_the_pools_threads_unless_the_pool_has_one_or_trials_run_in_children(
) {
    let env = Env::small();
    // One trial, in a child process under its lease (`parallel = 2`).
    let vary = "[sweep.vary]\ntrain.lr = [0.001]\n";
    env.write(
        "children.toml",
        &format!("{SMALL}\n[sweep]\nparallel = 2\n{vary}"),
    );
    let held = |case, threads| threads_before_the_summary(&env, case, threads);
    // A pool of one thread is left as it was: that thread apart from the training thread, so
    // that work other threads hand to the pool never waits for the training thread. A pool of
    // three has the training thread as one of its three: one thread more than a pool of one
    // (a training thread that hands each parallel op to the pool would make it two).
    for case in [["train", "small.toml"], ["sweep", "small.toml"]] {
        let (one, three) = (held(case, 1), held(case, 3));
        assert_eq!(
            three - one,
            1,
            "{case:?}: {one} threads with a pool of one, {three} with three"
        );
    }
    // A search whose trials train in children keeps its thread apart (its probes measured
    // with it so).
    let case = ["sweep", "children.toml"];
    let (one, three) = (held(case, 1), held(case, 3));
    assert_eq!(
        three - one,
        2,
        "{case:?}: {one} threads with a pool of one, {three} with three"
    );
}
