//! A run's compute threads: the thread that calls the steps is one of rayon's workers
//! (`backend::join_compute_pool`), so a run on flex holds the pool's threads and no more.

use std::process::Stdio;
use std::time::{Duration, Instant};

use super::*;

/// `tidemark train` on the small config with `RAYON_NUM_THREADS=threads`, held stopped
/// (SIGSTOP, by itself) before its summary: the threads it holds there. It then goes on, and
/// must finish.
fn threads_before_the_summary(env: &Env, threads: usize) -> usize {
    let name = format!("run.name=threads-{threads}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args(["train", "--config", "small.toml", "--quiet", "--set", &name])
        // No loader threads: the count is the training thread and rayon's.
        .args(["--set", "data.num_workers=0"])
        .current_dir(env.path(""))
        .env("RAYON_NUM_THREADS", threads.to_string())
        .env("TIDEMARK_FAILPOINT", "summary:1:STOP")
        .env(
            "TIDEMARK_FAILPOINT_COUNT",
            env.path(&format!("count-{threads}")),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let start = Instant::now();
    loop {
        if process_state(pid) == Some('T') {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            panic!("RAYON_NUM_THREADS={threads}: ended ({status}) before its summary: {stderr}");
        }
        if start.elapsed() > Duration::from_secs(300) {
            child.kill().ok();
            child.wait().ok();
            panic!("RAYON_NUM_THREADS={threads}: not at its summary in 5 minutes");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Counted, then continued before anything is asserted: a stopped run is never left behind.
    let held = std::fs::read_dir(format!("/proc/{pid}/task")).map(|tasks| tasks.count());
    let resumed = Command::new("kill")
        .args(["-CONT", &pid.to_string()])
        .status();
    assert!(resumed.unwrap().success());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "RAYON_NUM_THREADS={threads}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    held.unwrap()
}

#[test]
fn the_training_thread_is_one_of_the_pools_threads_unless_the_pool_has_one() {
    let env = Env::small();
    // Three compute threads: the training thread and two workers (a program whose training
    // thread hands each parallel op to the pool holds four).
    assert_eq!(threads_before_the_summary(&env, 3), 3);
    // A pool of one thread is left as it was: that thread apart from the training thread, so
    // that work other threads hand to the pool never waits for the training thread.
    assert_eq!(threads_before_the_summary(&env, 1), 2);
}
