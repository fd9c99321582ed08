//! A search killed anywhere loses nothing (issue 38): a pruned search (ASHA), killed with
//! SIGKILL or SIGTERM at named moments spread over its run (probing, starting a trial or its
//! child, mid-epoch, between an epoch's snapshot and its checkpoint, at a rung before the
//! pause is carried out, around a summary, after the search recorded an end, before the
//! ranking), is finished by `sweep --resume`:
//! - one trial at a time, to the same `sweep.json` as the search never stopped: the same
//!   trials completed and pruned, after the same epochs, with the same values to 1e-6;
//! - two at a time (where ASHA's promotions depend on which child ends first), with every
//!   trial completed or pruned, each completed one with its value in an unpruned search, and
//!   no child of the killed search alive 2 s after it ended.
//!
//! The moments are `tidemark`'s own test hooks (`src/failpoint.rs`): the `N`-th pass of a
//! moment, counted across the search and its children, signals the search's process.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Env, SMALL};

/// Six trials of four epochs, ASHA's rungs at epochs 1 and 3, `[sweep]` keys `keys`.
pub(super) fn config(env: &Env, keys: &str, vary: &str) {
    let text = format!(
        "{SMALL}\n[sweep]\nmonitor = \"val_loss\"\n{keys}\n[sweep.prune]\nmethod = \"asha\"\n\
         [sweep.vary]\n{vary}\n"
    );
    let text = text.replace("samples = 1200", "samples = 600");
    env.write("search.toml", &text.replace("epochs = 3", "epochs = 4"));
}

pub(super) const LRS: &str = "train.lr = [0.0003, 0.001, 0.003, 0.005, 0.01, 0.05]";

/// `tidemark ARGS` in `env`, with the moment `failpoint` armed if given; the exit status and
/// stderr.
pub(super) fn tidemark(
    env: &Env,
    args: &[&str],
    failpoint: Option<(&str, &str)>,
) -> (ExitStatus, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tidemark"));
    command
        .args(args)
        .current_dir(env.path("."))
        .env("XDG_RUNTIME_DIR", env.path("."))
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some((moment, count)) = failpoint {
        command
            .env("TIDEMARK_FAILPOINT", moment)
            .env("TIDEMARK_FAILPOINT_COUNT", env.path(count));
    }
    let child = command.spawn().unwrap();
    let pid = child.id();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if failpoint.is_some() {
        no_child_left(pid, &stderr);
    }
    (output.status, stderr)
}

/// Fails if a process started by search `pid` (its children name it in
/// `TIDEMARK_SEARCH_PID`) is still alive 2 s after the search ended.
fn no_child_left(pid: u32, stderr: &str) {
    let needle = format!("TIDEMARK_SEARCH_PID={pid}\0");
    let children = || -> Vec<u32> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        (entries.flatten())
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|p| {
                let environ = std::fs::read(format!("/proc/{p}/environ")).unwrap_or_default();
                let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
                String::from_utf8_lossy(&environ).contains(&needle) && !stat.contains(") Z ")
            })
            .collect()
    };
    let ended = Instant::now();
    while !children().is_empty() && ended.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = children();
    for p in &left {
        let _ = Command::new("kill")
            .args(["-KILL", &p.to_string()])
            .status();
    }
    assert!(
        left.is_empty(),
        "children {left:?} of search {pid} alive 2 s after it ended: {stderr}"
    );
}

/// Each trial's (status, epochs, monitored value), by number.
pub(super) type Outcome = BTreeMap<u64, (String, u64, Option<f64>)>;

/// The outcome in the `sweep.json` of `dir`.
pub(super) fn outcome(env: &Env, dir: &str) -> Outcome {
    rows(env, dir, "sweep.json")
}

/// The outcome in `file` of `dir`: a `sweep.json`, or a shard's rows.
pub(super) fn rows(env: &Env, dir: &str, file: &str) -> Outcome {
    let text = std::fs::read_to_string(env.path(dir).join(file)).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    let rows = match &json {
        Value::Array(rows) => rows,
        _ => json["trials"].as_array().unwrap(),
    };
    rows.iter()
        .map(|t| {
            let status = t["status"].as_str().unwrap().to_string();
            let epochs = t["epochs"].as_u64().unwrap_or(0);
            (
                t["trial"].as_u64().unwrap(),
                (status, epochs, t["monitored"].as_f64()),
            )
        })
        .collect()
}

/// Fails unless the `resumed` search's outcome is the `whole` one's: the same trials
/// completed and pruned, after the same epochs, with the same values to 1e-6.
pub(super) fn same(armed: &str, resumed: &Outcome, whole: &Outcome) {
    assert_eq!(resumed.len(), whole.len(), "{armed}");
    for (trial, (status, epochs, value)) in resumed {
        let (s, e, v) = &whole[trial];
        assert_eq!((status, epochs), (s, e), "{armed}: trial {trial}");
        let close = match (value, v) {
            (Some(a), Some(b)) => (a - b).abs() < 1e-6,
            (a, b) => a == b,
        };
        assert!(close, "{armed}: trial {trial}: {value:?} against {v:?}");
    }
}

/// The moments a search is killed at, `NAME:N`: every kind of moment, early and late.
pub(super) const MOMENTS: [&str; 22] = [
    "probe:1",
    "probe:4",
    "start:1",
    "start:3",
    "start:7",
    "step:5",
    "step:40",
    "step:100",
    "snapshot:1",
    "snapshot:6",
    "snapshot:8",
    "checkpoint:1",
    "checkpoint:6",
    "checkpoint:9",
    "summary:1",
    "summary:4",
    "summary:7",
    "summarised:2",
    "summarised:6",
    "ended:1",
    "ended:5",
    "results:1",
];

/// Kills a search of `search.toml` at every one of `moments`, SIGKILL and SIGTERM in turn,
/// resumes it, and hands each resumed search's directory and outcome to `check`.
pub(super) fn kill_everywhere(
    env: &Env,
    moments: &[&str],
    mut check: impl FnMut(&str, &str, &Outcome),
) {
    for (i, moment) in moments.iter().enumerate() {
        let signal = ["KILL", "TERM"][i % 2];
        let armed = format!("{moment}:{signal}");
        let out = format!("k{i}");
        let args = ["sweep", "--config", "search.toml", "--out", &out];
        let (status, stderr) = tidemark(env, &args, Some((&armed, &format!("count-{i}"))));
        // SIGTERM is handled at every moment: exit code 130 and one line.
        let stopped = match signal {
            "KILL" => status.signal() == Some(9),
            _ => status.code() == Some(130) && stderr.contains("stopped by a signal"),
        };
        assert!(
            stopped,
            "{armed}: not stopped as asked ({status}): {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{armed}: {stderr}");
        let dir = format!("{out}/small-sweep");
        let (status, stderr) = tidemark(env, &["sweep", "--resume", &dir], None);
        assert!(status.success(), "{armed}: the resume failed: {stderr}");
        check(&armed, &dir, &outcome(env, &dir));
    }
}

#[test]
fn a_search_killed_anywhere_one_trial_at_a_time_ends_as_if_never_stopped() {
    let env = Env::new();
    config(&env, "", LRS);
    let (status, stderr) = tidemark(&env, &["sweep", "--config", "search.toml"], None);
    assert!(status.success(), "{stderr}");
    let whole = outcome(&env, "runs/small-sweep");
    let pruned = whole.values().filter(|t| t.0 == "pruned").count();
    assert!(pruned >= 2, "ASHA pruned {pruned}: {whole:?}");
    kill_everywhere(&env, &MOMENTS, |armed, _, resumed| {
        same(armed, resumed, &whole)
    });
}

#[test]
fn a_search_killed_anywhere_two_trials_at_a_time_leaves_no_child_and_loses_no_trial() {
    let env = Env::new();
    config(&env, "parallel = 2\nbudget = \"4GiB\"", LRS);
    let unpruned = ["--set", "sweep.prune.method=\"none\"", "--out", "full"];
    let (status, stderr) = tidemark(
        &env,
        &[&["sweep", "--config", "search.toml"][..], &unpruned].concat(),
        None,
    );
    assert!(status.success(), "{stderr}");
    let full = outcome(&env, "full/small-sweep");
    kill_everywhere(&env, &MOMENTS, |armed, _, resumed| {
        assert_eq!(resumed.len(), full.len(), "{armed}");
        for (trial, (status, epochs, value)) in resumed {
            match status.as_str() {
                "completed" => {
                    let (a, b) = (value.unwrap(), full[trial].2.unwrap());
                    assert_eq!(*epochs, full[trial].1, "{armed}: trial {trial}");
                    assert!(
                        (a - b).abs() < 1e-6,
                        "{armed}: trial {trial}: {a} against {b}"
                    );
                }
                "pruned" => assert!([1, 3].contains(epochs), "{armed}: trial {trial}"),
                other => panic!("{armed}: trial {trial} {other}: {resumed:?}"),
            }
        }
    });
}

#[test]
fn a_tpe_search_killed_anywhere_draws_and_ends_as_if_never_stopped() {
    let env = Env::new();
    let vary = "train.lr = { min = 1e-4, max = 1e-1, log = true }\nmodel.hidden = [[8], [32]]";
    config(&env, "method = \"tpe\"\ntrials = 6\nseed = 3", vary);
    let (status, stderr) = tidemark(&env, &["sweep", "--config", "search.toml"], None);
    assert!(status.success(), "{stderr}");
    let whole = outcome(&env, "runs/small-sweep");
    let plan = |dir: &str| -> Value {
        let text = std::fs::read_to_string(env.path(dir).join("plan.json")).unwrap();
        serde_json::from_str::<Value>(&text).unwrap()["search"]["trials"].clone()
    };
    let drawn = plan("runs/small-sweep");
    // TPE trains its trials in their numbers' order, unprobed.
    let moments: Vec<&str> = (MOMENTS.iter().copied())
        .filter(|m| !m.starts_with("probe"))
        .collect();
    kill_everywhere(&env, &moments, |armed, dir, resumed| {
        same(armed, resumed, &whole);
        assert_eq!(plan(dir), drawn, "{armed}: TPE drew other trials");
    });
}

/// Each trial's summary.json and latest checkpoint's files (those it has), by path, as bytes.
pub(super) fn trial_files(env: &Env, dir: &str) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(env.path(dir)).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with("trial-") {
            continue;
        }
        let summary = entry.path().join("summary.json");
        if let Ok(bytes) = std::fs::read(summary) {
            files.insert(format!("{name}/summary.json"), bytes);
        }
        let checkpoints = entry.path().join("checkpoints");
        let Ok(latest) = std::fs::read_to_string(checkpoints.join("latest")) else {
            continue;
        };
        for file in std::fs::read_dir(checkpoints.join(latest.trim()))
            .unwrap()
            .flatten()
        {
            let key = format!("{name}/latest/{}", file.file_name().to_string_lossy());
            files.insert(key, std::fs::read(file.path()).unwrap());
        }
    }
    files
}

#[test]
fn a_resumed_finished_search_retrains_no_trial_and_rewrites_no_trial_file() {
    let env = Env::new();
    config(&env, "", LRS);
    // A finished search resumed: its pruned trials stay pruned, its completed ones completed,
    // and no trial's file is written again (the journal is its record: a trial is trained
    // again only where it failed, lost its summary, or has fewer epochs than asked).
    let (status, stderr) = tidemark(
        &env,
        &["sweep", "--config", "search.toml", "--out", "one"],
        None,
    );
    assert!(status.success(), "{stderr}");
    let dir = "one/small-sweep";
    let whole = outcome(&env, dir);
    let before = trial_files(&env, dir);
    let (status, stderr) = tidemark(&env, &["sweep", "--resume", dir], None);
    assert!(status.success(), "{stderr}");
    assert!(!stderr.contains("started"), "{stderr}");
    let pruned = whole.values().filter(|t| t.0 == "pruned").count();
    assert!(pruned >= 2, "{whole:?}");
    assert_eq!(outcome(&env, dir), whole);
    assert_eq!(
        trial_files(&env, dir),
        before,
        "a trial's files were rewritten"
    );
}
