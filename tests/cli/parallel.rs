//! A search's trials in parallel (`[sweep] parallel`, `budget`): each in a child process under
//! a memory lease, started only while the running leases fit the budget, with the sequential
//! search's results; a child that dies is recorded, and `--resume` trains it again.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{num, process_state, wait_for, Env, SMALL};

/// Four trials of one model size (leases of one size), varied in the learning rate.
fn grid(extra: &str) -> String {
    format!(
        "{SMALL}\n[sweep]\nmonitor = \"val_accuracy\"\n{extra}\n[sweep.vary]\n\
         train.lr = [0.001, 0.002, 0.003, 0.004]\n"
    )
}

fn sweep_json(env: &Env, dir: &str) -> Value {
    let text = std::fs::read_to_string(env.path(dir).join("sweep.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn trials(json: &Value) -> Vec<Value> {
    let mut trials = json["trials"].as_array().unwrap().clone();
    trials.sort_by_key(|t| t["trial"].as_u64());
    trials
}

/// Each trial's (start, end, lease).
fn slots(json: &Value) -> Vec<(f64, f64, f64)> {
    trials(json)
        .iter()
        .map(|t| {
            (
                num(t, "started_s"),
                num(t, "ended_s"),
                num(t, "lease_bytes"),
            )
        })
        .collect()
}

/// The most the running leases ever held together: checked at every start.
fn most_leased(slots: &[(f64, f64, f64)]) -> f64 {
    slots
        .iter()
        .map(|&(at, ..)| {
            slots
                .iter()
                .filter(|&&(start, end, _)| start <= at && at < end)
                .map(|s| s.2)
                .sum::<f64>()
        })
        .fold(0.0, f64::max)
}

fn overlapped(slots: &[(f64, f64, f64)]) -> bool {
    slots
        .iter()
        .enumerate()
        .any(|(i, a)| slots.iter().skip(i + 1).any(|b| a.0 < b.1 && b.0 < a.1))
}

#[test]
fn trials_in_parallel_stay_in_their_leases_under_the_budget_with_the_sequential_results() {
    let env = Env::new();
    env.write("grid.toml", &grid("parallel = 2"));
    let run = env.run(&["sweep", "--config", "grid.toml", "--out", "par"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert!(
        run.stderr()
            .contains("sweep: up to 2 trials at once on this device, under a budget of"),
        "{}",
        run.stderr()
    );
    let par = sweep_json(&env, "par/small-sweep");
    assert_eq!(par["parallel"], 2);
    let budget = num(&par, "budget_bytes");
    let slots = slots(&par);
    for t in trials(&par) {
        assert_eq!(t["status"], "completed", "{t}");
        assert_eq!(t["epochs"], 3, "{t}");
        let peak = num(&t["memory"], "peak_bytes_in_use");
        assert!(peak <= num(&t, "lease_bytes"), "peak above the lease: {t}");
        assert!(num(&t, "ended_s") > num(&t, "started_s"), "{t}");
    }
    assert!(most_leased(&slots) <= budget, "{slots:?} over {budget}");
    assert!(overlapped(&slots), "two trials ran at once: {slots:?}");
    // The leases, the times and the budget are the journal's: with the worker's schedule and
    // every view gone, a report writes the same results.
    let dir = env.path("par/small-sweep");
    let written = std::fs::read(dir.join("sweep.json")).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("schedule-") || name.starts_with("sweep.") || name == "plan.json" {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }
    let report = env.run(&["report", "par/small-sweep"]);
    assert_eq!(report.code(), 0, "{}", report.stderr());
    assert_eq!(std::fs::read(dir.join("sweep.json")).unwrap(), written);

    let seq = env.run(&["sweep", "--config", "grid.toml", "--parallel", "1"]);
    assert_eq!(seq.code(), 0, "{}", seq.stderr());
    let seq = sweep_json(&env, "runs/small-sweep");
    assert_eq!(seq["parallel"], 1);
    assert!(seq["budget_bytes"].is_null());
    for (p, s) in trials(&par).iter().zip(trials(&seq)) {
        assert_eq!(p["name"], s["name"]);
        let (a, b) = (num(p, "monitored"), num(&s, "monitored"));
        assert!(
            (a - b).abs() <= 1e-6,
            "{}: {a} in parallel, {b} alone",
            p["name"]
        );
        assert!(s["lease_bytes"].is_null(), "{s}");
    }
}

#[test]
fn a_tight_budget_runs_one_trial_at_a_time_and_one_under_every_lease_is_refused_before_training() {
    let env = Env::new();
    env.write("grid.toml", &grid("parallel = 4"));
    let run = env.run(&["sweep", "--config", "grid.toml", "--out", "first"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let lease = trials(&sweep_json(&env, "first/small-sweep"))
        .iter()
        .map(|t| num(t, "lease_bytes"))
        .fold(0.0, f64::max);
    // Room for one lease, not two: the trials wait, then run, one at a time.
    let one = format!("sweep.budget={}", (lease * 1.5) as u64);
    let run = env.run(&[
        "sweep",
        "--config",
        "grid.toml",
        "--out",
        "one",
        "--set",
        &one,
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let json = sweep_json(&env, "one/small-sweep");
    assert!(trials(&json).iter().all(|t| t["status"] == "completed"));
    let slots = slots(&json);
    assert!(!overlapped(&slots), "one at a time: {slots:?}");

    // Under half a lease, no trial can run: the search is refused before any trains, with
    // both sizes (each trial failed alone before).
    let half = format!("sweep.budget={}", (lease / 2.0) as u64);
    let run = env.run(&[
        "sweep",
        "--config",
        "grid.toml",
        "--out",
        "none",
        "--set",
        &half,
    ]);
    assert_eq!(run.code(), 2, "{}", run.stderr());
    let stderr = run.stderr();
    let error = stderr.lines().last().unwrap();
    assert!(
        error.starts_with("error: [sweep]: sweep.budget: ")
            && error.contains("is smaller than every trial's memory lease (the smallest, trial-"),
        "{stderr}"
    );
    assert!(
        !env.path("none/small-sweep/trial-001/summary.json").exists(),
        "nothing trained"
    );
}

/// The text of the search's timeline, `schedule-<worker>.json` in `dir` (its one worker's).
pub(super) fn schedule(env: &Env, dir: &str) -> Option<String> {
    let entries = std::fs::read_dir(env.path(dir)).ok()?;
    let path = entries.filter_map(|e| Some(e.ok()?.path())).find(|p| {
        let name = p.file_name().unwrap_or_default().to_string_lossy();
        name.starts_with("schedule-") && name.ends_with(".json")
    })?;
    std::fs::read_to_string(path).ok()
}

/// The pid of a running trial that has written a checkpoint after an epoch, from the
/// search's worker's `schedule-<worker>.json`, stopped (SIGSTOP) and checked to be that trial's live child, so
/// that a signal sent to it next cannot miss it or hit another process.
fn stopped_with_a_checkpoint(env: &Env, dir: &str) -> Option<(u64, i32)> {
    let (trial, pid) = running_with_a_checkpoint(env, dir)?;
    signal(pid, "-STOP");
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let launch = format!("trial-{trial:03}.toml");
    match process_state(pid) == Some('T') && String::from_utf8_lossy(&cmdline).contains(&launch) {
        true => Some((trial, pid)),
        false => {
            signal(pid, "-CONT");
            None
        }
    }
}

fn signal(pid: i32, which: &str) {
    std::process::Command::new("kill")
        .args([which, &pid.to_string()])
        .status()
        .unwrap();
}

/// The pid of a running trial that has written a checkpoint after an epoch, from the
/// search's worker's `schedule-<worker>.json`.
fn running_with_a_checkpoint(env: &Env, dir: &str) -> Option<(u64, i32)> {
    let text = schedule(env, dir)?;
    let schedule: Value = serde_json::from_str(&text).ok()?;
    schedule["slots"].as_object()?.values().find_map(|slot| {
        let trial = slot["trial"].as_u64()?;
        let epoch = env
            .path(dir)
            .join(format!("trial-{trial:03}/checkpoints/epoch-1"));
        (slot["ended_unix"].is_null() && epoch.is_dir())
            .then(|| (trial, slot["pid"].as_i64().unwrap() as i32))
    })
}

/// The grid two at a time, eight epochs a trial, started in the background. Fifteen times the
/// small config's data, so that a trial runs for a while after its first checkpoint (with
/// Burn optimized in the test build, the small config's whole search takes about a second;
/// at five times, a loaded CI machine once saw the whole search end between two looks).
fn search_of_eight_epochs(env: &Env) -> std::process::Child {
    env.write("grid.toml", &grid("parallel = 2"));
    std::process::Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args(["sweep", "--config", "grid.toml", "--set", "train.epochs=8"])
        .args(["--set", "data.samples=18000"])
        .current_dir(env.path("."))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_killed_child_is_recorded_the_others_finish_and_resume_trains_it_from_its_checkpoint() {
    let env = Env::new();
    let mut child = search_of_eight_epochs(&env);
    let (trial, pid) = wait_for(&mut child, "a trial checkpointed", || {
        stopped_with_a_checkpoint(&env, "runs/small-sweep")
    });
    signal(pid, "-KILL");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let json = sweep_json(&env, "runs/small-sweep");
    for t in trials(&json) {
        match t["trial"].as_u64() == Some(trial) {
            true => {
                assert_eq!(t["status"], "failed", "{t}");
                let reason = t["reason"].as_str().unwrap();
                assert!(
                    reason.starts_with("killed by signal 9 (SIGKILL)"),
                    "{reason}"
                );
            }
            false => assert_eq!(t["status"], "completed", "{t}"),
        }
    }
    let resumed = env.run(&["sweep", "--resume", "runs/small-sweep"]);
    assert_eq!(resumed.code(), 0, "{}", resumed.stderr());
    let json = sweep_json(&env, "runs/small-sweep");
    assert!(trials(&json).iter().all(|t| t["status"] == "completed"));
    // The trial trained again takes the failed one's place in the study's count too.
    let done = format!(
        "of {n} trials done ({n} completed, 0 pruned, 0 failed)",
        n = trials(&json).len()
    );
    assert!(resumed.stderr().contains(&done), "{}", resumed.stderr());
    let dir = format!("runs/small-sweep/trial-{trial:03}");
    let snaps = env.snapshots(&dir);
    assert!(
        snaps.iter().any(|s| s["event"] == "resume"),
        "trial {trial} went on from its checkpoint"
    );
    assert_eq!(env.summary(&dir)["epochs"], 8);
}

#[test]
fn sigterm_stops_every_child_at_its_checkpoint_and_resume_finishes_the_search() {
    let env = Env::new();
    let mut child = search_of_eight_epochs(&env);
    // A trial held stopped (SIGSTOP) keeps the search from finishing before the signal
    // reaches it, however loaded the machine; it goes on (SIGCONT) to receive its SIGTERM.
    let (_, trial) = wait_for(&mut child, "a trial checkpointed", || {
        stopped_with_a_checkpoint(&env, "runs/small-sweep")
    });
    signal(child.id() as i32, "-TERM");
    signal(trial, "-CONT");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr
            .contains("error: stopped by a signal: every running trial kept its latest checkpoint"),
        "{stderr}"
    );
    // Every child has exited: none of the schedule's processes is left.
    let text = schedule(&env, "runs/small-sweep").unwrap();
    let schedule: Value = serde_json::from_str(&text).unwrap();
    for slot in schedule["slots"].as_object().unwrap().values() {
        assert!(!slot["ended_unix"].is_null(), "{slot}");
        let pid = slot["pid"].as_u64().unwrap();
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists() || zombie_or_other(pid));
    }
    // The resume's config reaches the children: two more epochs for every trial.
    let resumed = env.run(&[
        "sweep",
        "--resume",
        "runs/small-sweep",
        "--set",
        "train.epochs=10",
    ]);
    assert_eq!(resumed.code(), 0, "{}", resumed.stderr());
    let json = sweep_json(&env, "runs/small-sweep");
    for t in trials(&json) {
        assert_eq!(t["status"], "completed", "{t}");
        assert_eq!(t["epochs"], 10, "{t}");
    }
}

/// Whether process `pid` is not a running trial child (a reused pid, or a zombie). A child
/// runs as `/proc/self/exe trial .../launch/trial-NNN.toml`, so its name in `stat` is `exe`:
/// its command line says what it is.
fn zombie_or_other(pid: u64) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let cmdline = String::from_utf8_lossy(&cmdline);
    let trial = cmdline.contains("\0trial\0") && cmdline.contains("launch/trial-");
    !trial || stat.contains(") Z ")
}

#[test]
fn listed_order_and_parallel_trials_do_not_go_together() {
    let env = Env::new();
    env.write("grid.toml", &grid("parallel = 2\norder = \"listed\""));
    let needles = [
        "sweep.order",
        "(sweep.parallel > 1) need one probed step of each trial",
    ];
    env.run(&["sweep", "--config", "grid.toml"])
        .fails_with(2, &needles);
    // The flag meets the same check as the key.
    env.write("grid.toml", &grid("order = \"listed\""));
    env.run(&["sweep", "--config", "grid.toml", "--parallel", "2"])
        .fails_with(2, &needles);
    assert!(!env.path("runs").exists(), "refused before any directory");
    // Runs of one config, without a [sweep] table, are not run in parallel.
    env.write("small.toml", SMALL);
    env.run(&["sweep", "--config", "small.toml", "--parallel", "2"])
        .fails_with(2, &["--parallel 2: small.toml has no [sweep] table"]);
    env.write("grid.toml", &grid("parallel = 2\nbudget = \"lots\""));
    env.run(&["sweep", "--config", "grid.toml"])
        .fails_with(2, &["sweep.budget", "\"lots\""]);
}

/// The search killed with SIGKILL, as the out-of-memory killer would: every child it was
/// running stops with it, by Linux's parent-death signal, within the 2 s docs/search.md
/// promises, keeping its latest checkpoint. Before, a child's watcher thread panicked writing
/// to the dead search's stderr, and the children trained on alone.
#[test]
fn the_children_of_a_killed_search_stop_with_it() {
    let env = Env::new();
    env.write("grid.toml", &grid("parallel = 2"));
    // Trials of 500 epochs: a child left alone would train on for minutes.
    children_stop_with_the_search(&env, "grid.toml", "runs/small-sweep", "train.epochs=500");
}

/// Starts `sweep --config CONFIG --set SET` (a search of long trials, two at a time, into
/// `dir`), kills it with SIGKILL once a trial has checkpointed, and checks that every running
/// child is gone within 2 s, each with its latest checkpoint whole.
pub(super) fn children_stop_with_the_search(env: &Env, config: &str, dir: &str, set: &str) {
    let mut search = std::process::Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args(["sweep", "--config", config, "--set", set])
        .current_dir(env.path("."))
        .env("XDG_RUNTIME_DIR", env.path("."))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (checkpointed, _) = wait_for(&mut search, "a trial checkpointed", || {
        running_with_a_checkpoint(env, dir)
    });
    let text = schedule(env, dir).unwrap();
    let schedule: Value = serde_json::from_str(&text).unwrap();
    let running: Vec<(u64, u64)> = schedule["slots"]
        .as_object()
        .unwrap()
        .values()
        .filter(|slot| slot["ended_unix"].is_null())
        .map(|slot| {
            (
                slot["trial"].as_u64().unwrap(),
                slot["pid"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(!running.is_empty());
    signal(search.id() as i32, "-KILL");
    search.wait().unwrap();
    let killed = Instant::now();
    let alive =
        |pid: u64| std::path::Path::new(&format!("/proc/{pid}")).exists() && !zombie_or_other(pid);
    while running.iter().any(|&(_, pid)| alive(pid)) && killed.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = killed.elapsed();
    let orphans: Vec<u64> = running
        .iter()
        .map(|&(_, pid)| pid)
        .filter(|&pid| alive(pid))
        .collect();
    for &pid in &orphans {
        signal(pid as i32, "-KILL");
    }
    assert!(
        orphans.is_empty(),
        "trials still training 10 s after the search died: {orphans:?}"
    );
    assert!(
        took < Duration::from_secs(2),
        "the children stopped {took:?} after the search"
    );
    // Each kept its latest checkpoint whole (one just started may have none yet).
    for (trial, _) in running {
        let trial_dir = env.path(dir).join(format!("trial-{trial:03}/checkpoints"));
        let Ok(latest) = std::fs::read_to_string(trial_dir.join("latest")) else {
            assert_ne!(trial, checkpointed, "trial {trial} lost its checkpoint");
            continue;
        };
        assert!(
            trial_dir.join(latest.trim()).join("model.bpk").is_file(),
            "{latest}"
        );
    }
}

/// Forty trials whose probes take seconds (a model of 512 x 512), each trained on two steps,
/// two at a time under their leases.
const PROBED: &str = include_str!("../../configs/search-lease.toml");

/// SIGTERM while a parallel search probes its trials, before any trains (at its fifth probe's
/// failpoint), ends it with exit code 130 and its one line, not killed by signal 15 without a
/// word; `sweep --resume` then runs the whole search, every trial inside its lease (the lease
/// and the child's own check are one model of what a trial needs, on any CPU's L2 cache).
#[test]
fn sigterm_while_probing_exits_130_and_the_search_resumes() {
    let env = Env::new();
    env.write("probe.toml", PROBED);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args(["sweep", "--config", "probe.toml"])
        .current_dir(env.path("."))
        .env("TIDEMARK_FAILPOINT", "probe:5:TERM")
        .env("TIDEMARK_FAILPOINT_COUNT", env.path("count"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let dir = "runs/lease-sweep";
    assert!(
        !env.path(dir).join("preflight.json").exists(),
        "the probes ran to their end: {stderr}"
    );
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("error: stopped by a signal"), "{stderr}");
    let resumed = env.run(&["sweep", "--resume", dir]);
    assert_eq!(resumed.code(), 0, "{}", resumed.stderr());
    let json = sweep_json(&env, dir);
    assert_eq!(trials(&json).len(), 40);
    for t in trials(&json) {
        assert_eq!(t["status"], "completed", "{t}");
        let (peak, lease) = (
            num(&t["memory"], "peak_bytes_in_use"),
            num(&t, "lease_bytes"),
        );
        assert!(
            peak <= lease,
            "{}: peak {peak} over its lease {lease}",
            t["name"]
        );
    }
}
