//! Resume: a run killed with SIGKILL (at a random step, or while it writes a checkpoint) and
//! resumed ends with the weights of a run that never stopped; broken checkpoints are refused
//! with one line naming the file, and nothing on disk is lost.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tidemark::train::Checkpoint;

use super::{sweep_runs, Env};

/// f32 on flex with accumulation and dropout: 960 training samples in loader batches of 16,
/// two per step, so 30 steps an epoch and 90 in the run; a checkpoint every 3 steps.
const RESUMABLE: &str = r#"
[run]
name = "r"
seed = 3

[model]
hidden = [48, 32]
dropout = 0.1

[data]
kind = "synthetic"
samples = 1200
features = 16
classes = 4
noise = 1.5
num_workers = 0

[train]
epochs = 3
batch_size = 16
accumulation_steps = 2
lr = 0.003

[checkpoint]
every_steps = 3
"#;

const STEPS: usize = 90;

pub(super) fn weights(run_dir: &Path) -> BTreeMap<String, Vec<f32>> {
    Checkpoint::latest(run_dir).unwrap().weights().unwrap()
}

/// The largest difference between two runs' final weights.
pub(super) fn max_difference(a: &Path, b: &Path) -> f32 {
    let (a, b) = (weights(a), weights(b));
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "the same parameters"
    );
    a.values()
        .zip(b.values())
        .flat_map(|(x, y)| {
            assert_eq!(x.len(), y.len());
            x.iter().zip(y).map(|(x, y)| (x - y).abs())
        })
        .fold(0.0, f32::max)
}

pub(super) fn spawn(env: &Env, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args(args)
        .current_dir(env.path(""))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// The step of the checkpoint `checkpoints/latest` names (epoch-N counts as N epochs of
/// `steps_per_epoch` steps).
pub(super) fn latest_step_of(run_dir: &Path, steps_per_epoch: usize) -> Option<usize> {
    let name = std::fs::read_to_string(run_dir.join("checkpoints/latest")).ok()?;
    match name.trim().split_once('-')? {
        ("step", s) => s.parse().ok(),
        ("epoch", e) => e.parse::<usize>().ok().map(|e| e * steps_per_epoch),
        _ => None,
    }
}

fn latest_step(run_dir: &Path) -> Option<usize> {
    latest_step_of(run_dir, STEPS / 3)
}

/// Kills `child` with SIGKILL once `ready` holds (polled), and says whether it was still
/// running then.
pub(super) fn kill_when(child: &mut Child, mut ready: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        if ready() {
            child.kill().unwrap(); // SIGKILL on Unix
            child.wait().unwrap();
            return true;
        }
        assert!(Instant::now() < deadline, "the run never got there");
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn reference(env: &Env) {
    env.write("r.toml", RESUMABLE);
    let run = env.run(&["train", "--config", "r.toml", "--set", "run.name=reference"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
}

/// A step in 3..75 drawn from the clock, printed so that a failure can be reproduced.
fn random_step() -> usize {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as usize;
    3 + nanos % 72
}

#[test]
fn a_run_killed_at_a_random_step_resumes_to_the_uninterrupted_weights() {
    let env = Env::new();
    reference(&env);
    let victim = env.path("runs/victim");
    let target = random_step();
    eprintln!("killing once the latest checkpoint is at step {target} or later");
    let mut child = spawn(
        &env,
        &["train", "--config", "r.toml", "--set", "run.name=victim"],
    );
    let killed = kill_when(&mut child, || {
        latest_step(&victim).is_some_and(|s| s >= target)
    });
    assert!(killed, "the run ended before step {target}");
    assert!(
        !victim.join("summary.json").exists(),
        "killed, not finished"
    );
    let at = latest_step(&victim).unwrap();

    let run = env.run(&["train", "--resume", "runs/victim"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert!(
        run.stderr().contains("resume: resuming from checkpoints/"),
        "{}",
        run.stderr()
    );
    let diff = max_difference(&env.path("runs/reference"), &victim);
    eprintln!("killed with the latest checkpoint at step {at}: weights differ by {diff:e}");
    assert!(
        diff <= 1e-6,
        "killed with the latest checkpoint at step {at} (target {target}): the final weights \
         differ by up to {diff:e}"
    );
    let summary = env.summary("runs/victim");
    assert_eq!(summary["status"], "completed");
    assert_eq!(summary["steps"], STEPS);
    assert_eq!(summary["epochs"], 3);
    let reference = env.summary("runs/reference");
    for key in ["first_loss", "final_loss", "final_val_accuracy"] {
        let (a, b) = (super::num(&summary, key), super::num(&reference, key));
        assert!(
            (a - b).abs() < 1e-6,
            "{key}: {a} resumed, {b} uninterrupted"
        );
    }
    let snapshots = env.snapshots("runs/victim");
    let resumes: Vec<_> = snapshots
        .iter()
        .filter(|s| s["event"] == "resume")
        .collect();
    assert_eq!(resumes.len(), 1, "one resume event");
    assert_eq!(
        snapshots[0]["event"], "run_start",
        "what was there stays first"
    );
    // The last epoch snapshots agree with the reference's, epoch by epoch.
    let last = |all: &[serde_json::Value], epoch: u64| {
        all.iter()
            .rfind(|s| s["event"] == "epoch" && s["epoch"] == epoch)
            .cloned()
            .unwrap()
    };
    let reference_snapshots = env.snapshots("runs/reference");
    for epoch in 1..=3 {
        let (a, b) = (last(&snapshots, epoch), last(&reference_snapshots, epoch));
        for key in ["loss", "val_loss", "val_accuracy"] {
            let (a, b) = (super::num(&a, key), super::num(&b, key));
            assert!((a - b).abs() < 1e-6, "epoch {epoch} {key}: {a} vs {b}");
        }
    }
}

#[test]
fn a_kill_while_a_checkpoint_is_written_leaves_the_previous_one_and_resume_uses_it() {
    let env = Env::new();
    reference(&env);
    // A checkpoint every step, so that one is nearly always being written; a kill counts when
    // it leaves a half-written `.tmp` directory behind.
    let mut caught = None;
    for attempt in 1..=10 {
        let name = format!("victim-{attempt}");
        let run_dir = env.path(&format!("runs/{name}"));
        let set_name = format!("run.name={name}");
        let args = [
            "train",
            "--config",
            "r.toml",
            "--set",
            &set_name,
            "--set",
            "checkpoint.every_steps=1",
        ];
        let mut child = spawn(&env, &args);
        let checkpoints = run_dir.join("checkpoints");
        let writing = || {
            latest_step(&run_dir).is_some_and(|s| s >= 5)
                && std::fs::read_dir(&checkpoints).is_ok_and(|entries| {
                    entries
                        .flatten()
                        .any(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
                })
        };
        if !kill_when(&mut child, writing) {
            continue;
        }
        let half_written: Vec<String> = std::fs::read_dir(&checkpoints)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        if !half_written.is_empty() {
            caught = Some((name, half_written));
            break;
        }
    }
    let (name, half_written) = caught.expect("no kill in 10 landed inside a checkpoint write");
    let run_dir = env.path(&format!("runs/{name}"));
    // The checkpoint `latest` names is whole: it loads.
    let latest = Checkpoint::latest(&run_dir).unwrap();
    latest.verify().unwrap();
    assert!(
        !half_written.contains(&format!(
            "{}.tmp",
            latest.dir.file_name().unwrap().to_string_lossy()
        )),
        "latest names a finished checkpoint, not {half_written:?}"
    );
    let run = env.run(&["train", "--resume", &format!("runs/{name}")]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let diff = max_difference(&env.path("runs/reference"), &run_dir);
    assert!(
        diff <= 1e-6,
        "killed while writing {half_written:?}: weights differ by up to {diff:e}"
    );
}

#[test]
fn broken_checkpoints_exit_2_with_one_line_naming_the_file_and_lose_nothing() {
    let env = Env::new();
    env.write("r.toml", RESUMABLE);
    let run = env.run(&[
        "train",
        "--config",
        "r.toml",
        "--set",
        "run.name=done",
        "--set",
        "train.epochs=1",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let done = env.path("runs/done");
    type Break = fn(&Path);
    let cases: [(&str, Break, &str); 7] = [
        (
            "truncated-model",
            |c| truncate(&c.join("model.bpk")),
            "model.bpk",
        ),
        (
            "garbage-optimizer",
            |c| garbage(&c.join("optimizer.bpk")),
            "optimizer.bpk",
        ),
        (
            "missing-model",
            |c| remove(&c.join("model.bpk")),
            "model.bpk: missing",
        ),
        (
            "bad-meta",
            |c| garbage(&c.join("meta.json")),
            "meta.json: not a checkpoint's state",
        ),
        (
            "no-latest",
            |c| remove(&c.with_file_name("latest")),
            "latest: missing",
        ),
        (
            "latest-elsewhere",
            |c| std::fs::write(c.with_file_name("latest"), "../../x").unwrap(),
            "latest: names \"../../x\"",
        ),
        (
            "latest-gone",
            |c| std::fs::write(c.with_file_name("latest"), "epoch-7").unwrap(),
            "epoch-7/meta.json: missing",
        ),
    ];
    for (name, break_it, needle) in cases {
        let copy = env.path(&format!("runs/{name}"));
        copy_dir(&done, &copy);
        break_it(&copy.join("checkpoints/epoch-1"));
        let before = listing(&copy);
        let run = env.run(&[
            "train",
            "--resume",
            &format!("runs/{name}"),
            "--set",
            "train.epochs=2",
        ]);
        run.fails_with(2, &[needle]);
        assert_eq!(listing(&copy), before, "{name}: nothing changed on disk");
    }
}

#[test]
fn resume_refuses_a_config_that_changes_the_run_and_a_run_already_done() {
    let env = Env::new();
    env.write("r.toml", RESUMABLE);
    let run = env.run(&[
        "train",
        "--config",
        "r.toml",
        "--set",
        "run.name=done",
        "--set",
        "train.epochs=1",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let before = listing(&env.path("runs/done"));
    let resume = |extra: &[&str]| {
        let mut args = vec!["train", "--resume", "runs/done"];
        args.extend_from_slice(extra);
        env.run(&args)
    };
    resume(&["--set", "train.epochs=2", "--set", "train.lr=0.1"]).fails_with_detail(
        2,
        &["train.lr is 0.003 in the run's config.toml but 0.1 here"],
        &["a resume may change only run.name,", "[memory]"],
    );
    resume(&[
        "--config",
        "r.toml",
        "--set",
        "train.epochs=2",
        "--set",
        "model.hidden=[8]",
    ])
    .fails_with_detail(2, &["model.hidden"], &["train.epochs"]);
    resume(&[]).fails_with(
        2,
        &[
            "already trained 1 of train.epochs = 1",
            "--set train.epochs=2",
        ],
    );
    env.run(&["train", "--resume", "runs/none"]).fails_with(
        2,
        &["not a run or sweep directory", "config.toml is missing"],
    );
    assert_eq!(listing(&env.path("runs/done")), before);
    // Harmless keys may change: a memory limit (four times the run's own peak, so that it
    // never trips), checkpoint frequency, more epochs.
    let peak = env.summary("runs/done")["peak_bytes_in_use"]
        .as_u64()
        .unwrap();
    let limit = format!("memory.limit={}", 4 * peak);
    let run = resume(&[
        "--set",
        "train.epochs=2",
        "--set",
        &limit,
        "--set",
        "checkpoint.every_steps=10",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert_eq!(env.summary("runs/done")["epochs"], 2);
}

fn truncate(path: &Path) {
    let len = std::fs::metadata(path).unwrap().len();
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.set_len(len / 2).unwrap();
}

fn garbage(path: &Path) {
    std::fs::write(path, b"\x00\x01not what it should be\xff").unwrap();
}

fn remove(path: &Path) {
    std::fs::remove_file(path).unwrap();
}

/// Copies directory `from` to `to`, recursively.
pub(super) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        match entry.file_type().unwrap().is_dir() {
            true => copy_dir(&entry.path(), &target),
            false => {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }
}

/// Every file under `dir` with its contents.
fn listing(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            for (k, v) in listing(&path) {
                out.insert(format!("{}/{k}", entry.file_name().to_string_lossy()), v);
            }
        } else {
            out.insert(
                entry.file_name().to_string_lossy().into_owned(),
                std::fs::read(&path).unwrap(),
            );
        }
    }
    out
}

#[test]
fn a_killed_sweep_resumes_at_the_first_run_that_did_not_finish() {
    let env = Env::small();
    let sweep_dir = env.path("runs/small-sweep");
    let third = sweep_dir.join("trial-003");
    let args = [
        "sweep",
        "--config",
        "small.toml",
        "--runs",
        "4",
        "--set",
        "train.epochs=2",
        "--set",
        "checkpoint.every_steps=5",
    ];
    let mut child = spawn(&env, &args);
    // Killed inside run 3, after its first checkpoint inside an epoch.
    let inside = || {
        std::fs::read_to_string(third.join("checkpoints/latest"))
            .is_ok_and(|name| name.starts_with("step-"))
    };
    assert!(
        kill_when(&mut child, inside),
        "the sweep ended before run 3"
    );
    assert!(!sweep_dir.join("sweep.json").exists());
    let finished = |i: usize| std::fs::read(sweep_dir.join(format!("trial-00{i}/summary.json")));
    let (first, second) = (finished(1).unwrap(), finished(2).unwrap());

    let run = env.run(&["sweep", "--resume", "runs/small-sweep"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let rows = sweep_runs(&sweep_dir);
    let dirs: Vec<&str> = rows
        .iter()
        .map(|r| r["run_dir"].as_str().unwrap())
        .collect();
    assert_eq!(dirs.len(), 4);
    for (i, dir) in dirs.iter().enumerate() {
        assert!(dir.ends_with(&format!("trial-00{}", i + 1)), "{dirs:?}");
    }
    assert_eq!(
        finished(1).unwrap(),
        first,
        "a finished run is kept as it was"
    );
    assert_eq!(
        finished(2).unwrap(),
        second,
        "a finished run is kept as it was"
    );
    let third = env.snapshots("runs/small-sweep/trial-003");
    assert_eq!(third.iter().filter(|s| s["event"] == "resume").count(), 1);
    assert_eq!(env.summary("runs/small-sweep/trial-003")["epochs"], 2);
    assert_eq!(
        env.summary("runs/small-sweep/trial-004")["status"],
        "completed"
    );
    env.run(&["sweep", "--resume", "runs/small-sweep/trial-001"])
        .fails_with(
            2,
            &["not a sweep directory", "trial-001/journal.log is missing"],
        );
    // A sweep goes on with the runs it planned: more are a new sweep's.
    env.run(&["sweep", "--resume", "runs/small-sweep", "--runs", "6"])
        .fails_with(2, &["trains the 4 runs it planned, not 6"]);
    // One written before a sweep of runs was a search kept only its count, and no journal:
    // refused, naming it.
    std::fs::write(sweep_dir.join("plan.json"), r#"{"runs": 4}"#).unwrap();
    std::fs::remove_file(sweep_dir.join("journal.log")).unwrap();
    env.run(&["sweep", "--resume", "runs/small-sweep"])
        .fails_with(
            2,
            &["--resume runs/small-sweep", "made by an earlier tidemark"],
        );
}
