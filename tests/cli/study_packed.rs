//! A worker that packs its device (`sweep --storage` with `sweep.parallel > 1`, issue 41):
//! its trials in child processes, each under its lease, several at once under its budget; the
//! children write their epochs to the study, and the worker their ends, its heartbeats for all
//! of them, and hands them all back on a signal. A killed worker's children die with it, and
//! another worker takes every one of its trials over.

use std::process::Output;

use nix::fcntl::{Flock, FlockArg};
use serde_json::Value;

use super::study::{all_completed_once, config, replay, stopped_worker, worker, Replayed};
use super::Env;

/// Two trials at once under a budget the leases fit in many times.
const PACKED: &str = "parallel = 2\nbudget = \"4GiB\"";

/// `n` packed workers at once (in `out-0`, `out-1`, ...), each of which must end with exit
/// code 0; their outputs.
fn packed_workers(env: &Env, n: usize) -> Vec<Output> {
    let children: Vec<_> = (0..n)
        .map(|i| worker(env, &i.to_string(), "journal.log", &[]))
        .collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    for output in &outputs {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
    }
    outputs
}

/// The summary of trial `number`'s run in `out`'s sweep directory.
fn summary(env: &Env, out: &str, number: usize) -> Option<Value> {
    let path = env.path(&format!("{out}/small-sweep/trial-{number:03}/summary.json"));
    let text = std::fs::read_to_string(path).ok()?;
    Some(serde_json::from_str(&text).unwrap())
}

/// Asserts that no process still trains a trial of `out`'s worker: each trial's lock, which
/// its child holds while it trains, is free.
fn no_child_left(env: &Env, out: &str) {
    let launch = env.path(&format!("{out}/small-sweep/launch"));
    for entry in std::fs::read_dir(launch).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "lock") {
            let file = std::fs::File::open(&path).unwrap();
            let lock = Flock::lock(file, FlockArg::LockExclusiveNonblock);
            assert!(lock.is_ok(), "{} is still held", path.display());
        }
    }
}

/// Who trained each trial: the worker of its last claim.
fn owners(trials: &[Replayed]) -> Vec<String> {
    (trials.iter())
        .map(|t| {
            t.system["tidemark:worker"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

#[test]
fn two_packed_workers_train_each_trial_once_in_a_child_under_its_lease() {
    let env = Env::new();
    config(&env, 12, 2, PACKED);
    let outputs = packed_workers(&env, 2);
    let trials = replay(&env);
    // Every epoch's value came from the child that trained it; the end from its worker.
    all_completed_once(&trials, 12);
    for t in &trials {
        let runs: Vec<Value> = (0..2)
            .filter_map(|i| summary(&env, &format!("out-{i}"), t.number))
            .collect();
        assert_eq!(runs.len(), 1, "trial {} trained once", t.number);
        let limit = runs[0]["limit_bytes"]
            .as_u64()
            .expect("trained under its lease");
        let peak = runs[0]["peak_bytes_in_use"].as_u64().unwrap();
        assert!(
            peak <= limit,
            "trial {}: peak {peak} B, lease {limit} B",
            t.number
        );
        assert_eq!(runs[0]["final_val_loss"].as_f64(), t.value);
    }
    let owners: std::collections::BTreeSet<String> = owners(&trials).into_iter().collect();
    assert_eq!(owners.len(), 2, "both workers trained: {owners:?}");
    // Each worker had two of its trials in children at once.
    for output in &outputs {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("; 2 running, "), "{stderr}");
        let packing = "sweep: up to 2 trials at once on this device, under a budget of ";
        assert!(stderr.contains(packing), "{stderr}");
    }
    // Each worker's sweep.json says how it packed its device: its leases, its budget, two at
    // once; as a parallel search's does (a worker's directory holds the trials it trained).
    for i in 0..2 {
        let path = env.path(&format!("out-{i}/small-sweep/sweep.json"));
        let json: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(json["parallel"], 2, "{json}");
        assert_eq!(json["budget_bytes"].as_u64(), Some(4 << 30), "{json}");
        let trained = (json["trials"].as_array().unwrap().iter())
            .filter(|r| {
                summary(
                    &env,
                    &format!("out-{i}"),
                    r["trial"].as_u64().unwrap() as usize,
                )
                .is_some()
            })
            .collect::<Vec<_>>();
        assert!(!trained.is_empty());
        for row in trained {
            let trial = row["trial"].as_u64().unwrap() as usize;
            let limit = summary(&env, &format!("out-{i}"), trial).unwrap()["limit_bytes"].clone();
            assert_eq!(row["lease_bytes"], limit, "{row}");
        }
    }
    // TPE's draws still see every result before them, whichever child gave it.
    for (i, t) in trials.iter().enumerate() {
        let Some(drawn) = t.system.get("tidemark:drawn_from") else {
            assert!(t.number <= 6, "trial {} was not drawn", t.number);
            continue;
        };
        let created = t.ops[&4][0];
        let before: Vec<usize> = (trials.iter().take(i))
            .filter(|d| *d.ops[&6].last().unwrap() < created)
            .map(|d| d.number)
            .collect();
        assert_eq!(
            super::study::drawn_from(drawn),
            before,
            "trial {}",
            t.number
        );
    }
}

#[test]
fn a_killed_packed_worker_s_children_die_with_it_and_its_trials_are_taken_over() {
    let env = Env::new();
    // Killed (SIGKILL, by its child) at the 40th optimizer step of its children together:
    // both of its first trials are in their second epoch.
    let keys = format!("{PACKED}\nheartbeat = 0.2\ngrace = 1.0");
    let (killed, before, _) = stopped_worker(&env, 4, &keys, "KILL");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&killed),
        Some(9)
    );
    let running = before.iter().filter(|t| t.state == 0).count();
    assert!(running >= 1, "{before:?}");
    // Its children ended with it (they would hold their trials' locks).
    std::thread::sleep(std::time::Duration::from_millis(500));
    no_child_left(&env, "out-a");
    let other = worker(&env, "a", "journal.log", &[])
        .wait_with_output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert!(other.status.success(), "{stderr}");
    assert_eq!(
        stderr.matches("taken over from worker").count(),
        running,
        "{stderr}"
    );
    all_completed_once(&replay(&env), 4);
}

#[test]
fn a_stopped_packed_worker_hands_every_trial_back() {
    let env = Env::new();
    let (stopped, before, said) = stopped_worker(&env, 4, PACKED, "TERM");
    assert!(said.contains("rejoin with the same command: "), "{said}");
    assert_eq!(stopped.code(), Some(130));
    // Nothing is left running: each unfinished trial is WAITING, with no owner.
    let waiting: Vec<&Replayed> = before.iter().filter(|t| t.state == 4).collect();
    assert!(!waiting.is_empty(), "{before:?}");
    assert!(
        before.iter().all(|t| t.state == 1 || t.state == 4),
        "{before:?}"
    );
    for t in &waiting {
        assert_eq!(t.system["tidemark:worker"], Value::Null, "{t:?}");
    }
    no_child_left(&env, "out-a");
    let next = worker(&env, "a", "journal.log", &[])
        .wait_with_output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&next.stderr);
    assert!(next.status.success(), "{stderr}");
    assert_eq!(
        stderr
            .matches("where a stopped worker handed it back")
            .count(),
        waiting.len(),
        "{stderr}"
    );
    all_completed_once(&replay(&env), 4);
}
