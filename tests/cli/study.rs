//! A study shared by workers (`sweep --storage JOURNAL`, issue 41), one machine standing in
//! for many: each worker its own process. The journal is read here as Optuna replays it (an
//! independent reader of its JSON lines): trial ids in creation order, a trial's changes
//! ignored once it finished.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use super::{Env, SMALL};

/// A TPE search of `trials` trials (the first half random), `epochs` epochs each.
pub(super) fn config(env: &Env, trials: usize, epochs: usize, keys: &str) {
    let text = format!(
        "{SMALL}\n[sweep]\nmethod = \"tpe\"\ntrials = {trials}\nseed = 3\nmonitor = \"val_loss\"\n\
         {keys}\n[sweep.vary]\ntrain.lr = {{ min = 1e-4, max = 0.1, log = true }}\n\
         model.hidden = [[8], [32], [64]]\n"
    );
    let text = text.replace("samples = 1200", "samples = 600");
    env.write(
        "study.toml",
        &text.replace("epochs = 3", &format!("epochs = {epochs}")),
    );
}

/// A worker: `tidemark sweep --config study.toml --storage STORAGE`, writing into `out-NAME`,
/// with the environment `vars`.
pub(super) fn worker(env: &Env, name: &str, storage: &str, vars: &[(&str, String)]) -> Child {
    let out = format!("out-{name}");
    let mut command = Command::new(env!("CARGO_BIN_EXE_tidemark"));
    command
        .args(["sweep", "--config", "study.toml", "--storage", storage])
        .args(["--out", &out])
        .current_dir(env.path("."))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in vars {
        command.env(key, value);
    }
    command.spawn().unwrap()
}

/// A worker of a study of `trials` trials (`[sweep]` keys `keys`) that sends itself `signal`
/// at its 50th optimizer step (`src/failpoint.rs`): its exit status, and the journal then.
pub(super) fn stopped_worker(
    env: &Env,
    trials: usize,
    keys: &str,
    signal: &str,
) -> (std::process::ExitStatus, Vec<Replayed>, String) {
    config(env, trials, 2, keys);
    let vars = [
        ("TIDEMARK_FAILPOINT", format!("step:50:{signal}")),
        (
            "TIDEMARK_FAILPOINT_COUNT",
            env.path("count").display().to_string(),
        ),
    ];
    let output = worker(env, "a", "journal.log", &vars)
        .wait_with_output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status, replay(env), stderr)
}

/// `n` workers at once (in `out-0`, `out-1`, ...) on the study in `storage`, each of which
/// must end with exit code 0; what they printed, one after another.
pub(super) fn workers(env: &Env, n: usize, storage: &str) -> String {
    let children: Vec<Child> = (0..n)
        .map(|i| worker(env, &i.to_string(), storage, &[]))
        .collect();
    let mut printed = String::new();
    for child in children {
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
        printed.push_str(&stderr);
    }
    printed
}

/// The numbers of a `tidemark:drawn_from`, kept as inclusive runs (`[[1, 5], [7, 9]]`).
pub(super) fn drawn_from(runs: &Value) -> Vec<usize> {
    let runs: Vec<[usize; 2]> = serde_json::from_value(runs.clone()).unwrap();
    runs.iter().flat_map(|&[a, b]| a..=b).collect()
}

/// A trial of the journal, as Optuna's replay leaves it.
#[derive(Debug, Default)]
pub(super) struct Replayed {
    pub(super) number: usize,
    pub(super) creator: String,
    pub(super) state: i64,
    pub(super) value: Option<f64>,
    pub(super) intermediate: BTreeMap<i64, f64>,
    pub(super) system: BTreeMap<String, Value>,
    /// Log numbers of its ops of each kind (those Optuna applies).
    pub(super) ops: BTreeMap<i64, Vec<usize>>,
    /// Ends written (op 6 with a finished state), applied or not.
    pub(super) ends: usize,
}

/// The journal's trials by id (one study), replayed.
pub(super) fn replay(env: &Env) -> Vec<Replayed> {
    let text = std::fs::read_to_string(env.path("journal.log")).unwrap();
    let mut trials: Vec<Replayed> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let op: Value = serde_json::from_str(line).unwrap();
        let code = op["op_code"].as_i64().unwrap();
        if code == 4 {
            // Created whole (a template): its system attributes in the record itself.
            let system = op["system_attrs"].as_object().cloned().unwrap_or_default();
            trials.push(Replayed {
                creator: op["worker_id"].as_str().unwrap().into(),
                system: system.into_iter().collect(),
                ..Replayed::default()
            });
        }
        let Some(id) = op["trial_id"]
            .as_u64()
            .or((code == 4).then(|| trials.len() as u64 - 1))
        else {
            continue;
        };
        let t = &mut trials[id as usize];
        if code == 6 && [1, 2, 3].contains(&op["state"].as_i64().unwrap()) {
            t.ends += 1;
        }
        if [1, 2, 3].contains(&t.state) {
            continue;
        }
        t.ops.entry(code).or_default().push(n);
        match code {
            6 => {
                t.state = op["state"].as_i64().unwrap();
                t.value = op["values"][0].as_f64();
            }
            7 => {
                let v = op["intermediate_value"].as_f64().unwrap();
                t.intermediate.insert(op["step"].as_i64().unwrap(), v);
            }
            9 => {
                let attr = op["system_attr"].as_object().unwrap();
                t.system.extend(attr.clone());
            }
            _ => {}
        }
        t.number = t
            .system
            .get("tidemark:trial")
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize;
    }
    trials
}

/// The events of trial `name`'s run in `out`'s sweep directory.
pub(super) fn events(env: &Env, out: &str, name: &str) -> Vec<String> {
    let dir = format!("{out}/small-sweep/{name}");
    (env.snapshots(&dir).iter())
        .map(|s| s["event"].as_str().unwrap().to_string())
        .filter(|e| e != "epoch")
        .collect()
}

/// Asserts every trial 1..=n is in the journal once, completed, with a value and an
/// intermediate value per epoch.
pub(super) fn all_completed_once(trials: &[Replayed], n: usize) {
    let numbers: Vec<usize> = trials.iter().map(|t| t.number).collect();
    assert_eq!(
        numbers,
        (1..=n).collect::<Vec<_>>(),
        "created once each, in order"
    );
    for t in trials {
        assert_eq!(t.state, 1, "trial {} completed: {t:?}", t.number);
        assert_eq!(t.ends, 1, "trial {} ended once", t.number);
        let value = t.value.unwrap();
        assert_eq!(t.intermediate.keys().copied().collect::<Vec<_>>(), [1, 2]);
        assert_eq!(
            t.intermediate[&2], value,
            "trial {}: its last epoch's value",
            t.number
        );
    }
}

#[test]
fn four_workers_share_one_tpe_study_and_every_draw_sees_every_worker() {
    let env = Env::new();
    config(&env, 12, 2, "");
    workers(&env, 4, "journal.log");
    let trials = replay(&env);
    all_completed_once(&trials, 12);
    // Each trial trained once, by one worker: one run in one of the workers' directories.
    for t in &trials {
        let runs: Vec<String> = (0..4)
            .filter(|i| {
                env.path(&format!("out-{i}/small-sweep/trial-{:03}", t.number))
                    .exists()
            })
            .map(|i| i.to_string())
            .collect();
        assert_eq!(runs.len(), 1, "trial {} trained in {runs:?}", t.number);
        assert_eq!(
            events(
                &env,
                &format!("out-{}", runs[0]),
                &format!("trial-{:03}", t.number)
            ),
            ["run_start", "memory_action", "run_end"]
                .map(String::from)
                .to_vec()
        );
    }
    // Past the random start (6 of 12), each draw was made from every trial completed before
    // it was created, whoever trained it.
    let creators: BTreeSet<&str> = trials.iter().map(|t| t.creator.as_str()).collect();
    assert!(
        creators.len() > 1,
        "more than one worker created trials: {creators:?}"
    );
    for (i, t) in trials.iter().enumerate() {
        let drawn = t.system.get("tidemark:drawn_from");
        assert_eq!(drawn.is_some(), t.number > 6, "trial {}", t.number);
        let Some(drawn) = drawn else { continue };
        let created = t.ops[&4][0];
        let done_before: Vec<usize> = (trials.iter().take(i))
            .filter(|d| *d.ops[&6].last().unwrap() < created)
            .map(|d| d.number)
            .collect();
        assert_eq!(
            drawn_from(drawn),
            done_before,
            "trial {} was drawn from",
            t.number
        );
    }
    // Every worker's ranking holds the whole study; report reads it from the journal alone.
    for i in 0..4 {
        let sweep: Value = serde_json::from_str(
            &std::fs::read_to_string(env.path(&format!("out-{i}/small-sweep/sweep.json"))).unwrap(),
        )
        .unwrap();
        let rows = sweep["trials"].as_array().unwrap();
        assert_eq!(rows.len(), 12);
        for row in rows {
            let t = &trials[row["trial"].as_u64().unwrap() as usize - 1];
            assert_eq!(row["status"], "completed");
            assert_eq!(row["monitored"].as_f64(), t.value);
        }
    }
    let report = env.run(&["report", "journal.log"]);
    assert_eq!(report.code(), 0, "{}", report.stderr());
    assert!(
        report
            .stdout()
            .contains("report: study small: 12 trials: 12 completed, 0 running"),
        "{}",
        report.stdout()
    );
}

#[test]
fn a_killed_worker_s_trial_is_taken_over_at_once_from_its_checkpoint() {
    let env = Env::new();
    // Killed (SIGKILL, by itself) at its 50th optimizer step: in its second trial's second
    // epoch (600 samples, a fifth held out, batches of 32: 15 steps an epoch). The grace
    // period is the default's minute: the next worker, on the same machine, sees that the
    // killed one's process has ended, and waits for no silence.
    let (killed, before, _) = stopped_worker(&env, 4, "", "KILL");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&killed),
        Some(9)
    );
    assert_eq!(before.len(), 2);
    assert_eq!((before[0].state, before[1].state), (1, 0), "{before:?}");
    let other = worker(&env, "a", "journal.log", &[])
        .wait_with_output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert!(other.status.success(), "{stderr}");
    let pid = killed_pid(&env);
    let said = format!("whose process ({pid}) on this machine has ended");
    assert!(
        stderr.contains("trial-002 taken over from worker") && stderr.contains(&said),
        "{stderr}"
    );
    let trials = replay(&env);
    all_completed_once(&trials, 4);
    // The first trial is not trained again; the second went on from its first epoch's
    // checkpoint, in the directory both workers share.
    let run = |n: &str| events(&env, "out-a", n);
    assert_eq!(run("trial-001"), ["run_start", "memory_action", "run_end"]);
    assert_eq!(
        run("trial-002"),
        ["run_start", "resume", "memory_action", "run_end"]
    );
    let snaps = env.snapshots("out-a/small-sweep/trial-002");
    let resume = snaps.iter().find(|s| s["event"] == "resume").unwrap();
    assert_eq!(resume["epoch"], 1);
    assert_ne!(trials[1].creator, trials[2].creator);
}

/// A worker killed (SIGKILL) between deciding and training, or between recording a trial's
/// end and its next decision, leaves a study the next worker completes: each trial once, the
/// claimed one taken over after the grace period, the ended one not trained again.
#[test]
fn a_worker_killed_as_a_trial_starts_or_ends_leaves_a_study_the_next_completes() {
    for (moment, left_running) in [("start:2:KILL", true), ("ended:1:KILL", false)] {
        let env = Env::new();
        config(&env, 3, 1, "heartbeat = 0.2\ngrace = 1.0");
        let vars = [
            ("TIDEMARK_FAILPOINT", moment.to_string()),
            (
                "TIDEMARK_FAILPOINT_COUNT",
                env.path("count").display().to_string(),
            ),
        ];
        let killed = worker(&env, "a", "journal.log", &vars)
            .wait_with_output()
            .unwrap();
        let signal = std::os::unix::process::ExitStatusExt::signal(&killed.status);
        assert_eq!(signal, Some(9), "{moment}");
        let before = replay(&env);
        let running = before.iter().filter(|t| t.state == 0).count();
        assert_eq!(running, usize::from(left_running), "{moment}: {before:?}");
        let next = worker(&env, "a", "journal.log", &[])
            .wait_with_output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&next.stderr);
        assert!(next.status.success(), "{moment}: {stderr}");
        assert_eq!(
            stderr.contains("trial-002 taken over from worker"),
            left_running,
            "{moment}: {stderr}"
        );
        let trials = replay(&env);
        assert_eq!(trials.len(), 3, "{moment}");
        for t in &trials {
            assert_eq!((t.state, t.ends), (1, 1), "{moment}: {t:?}");
        }
        // The trial whose end was recorded is not trained again.
        let first = events(&env, "out-a", "trial-001");
        assert_eq!(first, ["run_start", "memory_action", "run_end"], "{moment}");
    }
}

#[test]
fn a_stopped_worker_hands_its_trial_back_and_the_next_takes_it_at_once() {
    let env = Env::new();
    // Stopped (SIGTERM, as Ctrl-C's SIGINT) in its second trial's second epoch, with a grace
    // the test would notice: the trial handed back is taken without it.
    let (stopped, before, said) = stopped_worker(&env, 3, "heartbeat = 10\ngrace = 600", "TERM");
    assert_eq!(stopped.code(), Some(130));
    // It says how to rejoin its study, not to resume a directory a worker cannot resume.
    let last = said.trim_end().lines().last().unwrap();
    assert!(
        last.starts_with("error: stopped by a signal: this worker handed its trials back")
            && last.ends_with(" sweep --config study.toml --storage journal.log --out out-a"),
        "{said}"
    );
    assert_eq!(before.len(), 2, "{before:?}");
    assert_eq!(before[1].state, 4, "handed back: WAITING");
    assert_eq!(before[1].system["tidemark:worker"], Value::Null);
    let start = std::time::Instant::now();
    let next = worker(&env, "a", "journal.log", &[])
        .wait_with_output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&next.stderr);
    assert!(next.status.success(), "{stderr}");
    assert!(stderr.contains("trial-002 taken up where a stopped worker handed it back"));
    assert!(
        start.elapsed().as_secs() < 300,
        "taken without waiting for the grace period"
    );
    let trials = replay(&env);
    all_completed_once(&trials, 3);
    assert_eq!(
        events(&env, "out-a", "trial-002"),
        // the stopped run ends (its memory released), and goes on from its first epoch
        [
            "run_start",
            "memory_action",
            "run_end",
            "resume",
            "memory_action",
            "run_end"
        ]
    );
}

#[test]
fn asha_ranks_every_worker_s_trials_at_its_rungs() {
    let env = Env::new();
    // Nine trials of four epochs, rungs at epochs 1 and 3 (eta 3).
    config(&env, 9, 4, "[sweep.prune]\nmethod = \"asha\"");
    let printed = workers(&env, 3, "journal.log");
    let trials = replay(&env);
    assert_eq!(trials.len(), 9);
    let mut epochs = 0;
    for t in &trials {
        assert_eq!(t.ends, 1, "trial {} ended once: {t:?}", t.number);
        let trained = t.intermediate.len();
        epochs += trained;
        match t.state {
            // Completed after every epoch, or pruned at a rung with its value there.
            1 => assert_eq!(trained, 4, "{t:?}"),
            2 => {
                assert!(trained == 1 || trained == 3, "{t:?}");
                assert_eq!(t.value, Some(t.intermediate[&(trained as i64)]));
            }
            other => panic!("trial {} ended in state {other}", t.number),
        }
    }
    let completed = trials.iter().filter(|t| t.state == 1).count();
    assert!(completed >= 1, "a trial trained to the end");
    // Rung 1 ranks all nine, whichever worker trained them: the best there went on (it is in
    // the top third whenever a worker asks, once three have arrived), and not all did.
    let past_first = trials.iter().filter(|t| t.intermediate.len() > 1).count();
    assert!(past_first < 9, "{past_first} went past rung 1");
    let at_first = |t: &&Replayed| t.intermediate[&1];
    let best = trials
        .iter()
        .min_by(|a, b| at_first(a).total_cmp(&at_first(b)))
        .unwrap();
    assert!(
        best.intermediate.len() > 1,
        "the best at rung 1 went on: {best:?}"
    );
    assert!(epochs < 9 * 4, "{epochs} epochs");
    // A pruned trial's own summary says so, with why, in each worker's directory it ran in
    // (one that went on past a rung in another worker's trained there from the start).
    for t in trials.iter().filter(|t| t.state == 2) {
        let summaries: Vec<Value> = (0..3)
            .map(|w| format!("out-{w}/small-sweep/trial-{:03}", t.number))
            .filter(|dir| env.path(dir).join("summary.json").exists())
            .map(|dir| env.summary(&dir))
            .collect();
        assert!(!summaries.is_empty(), "trial {} ran", t.number);
        for s in &summaries {
            assert_eq!(s["status"], "pruned", "trial {}: {s}", t.number);
            let why = s["stopped_by"].as_str().unwrap();
            assert!(why.starts_with("ASHA: ranked "), "{why}");
        }
        // Told once, by the worker that pruned it at the study's end.
        let line = format!("trial-{:03} pruned: ASHA: ranked ", t.number);
        assert_eq!(printed.matches(&line).count(), 1, "{line} in:\n{printed}");
    }
    let report = env.run(&["report", "journal.log"]);
    let pruned = format!(
        "{} completed, 0 running on 0 workers, {} pruned",
        completed,
        9 - completed
    );
    assert!(report.stdout().contains(&pruned), "{}", report.stdout());
}

#[test]
fn a_study_refuses_another_search_and_bad_settings() {
    let env = Env::new();
    config(&env, 2, 2, "");
    let first = worker(&env, "a", "journal.log", &[])
        .wait_with_output()
        .unwrap();
    assert!(first.status.success());
    let other = env.run(&[
        "sweep",
        "--config",
        "study.toml",
        "--storage",
        "journal.log",
        "--set",
        "sweep.seed=4",
    ]);
    other.fails_with(2, &["journal.log", "holds another search", "run.name"]);
    // A worker's directory is the study's: the worker rejoins, it does not resume alone.
    let resume = env.run(&["sweep", "--resume", "out-a/small-sweep"]);
    resume.fails_with(
        2,
        &[
            "/journal.log;",
            "the study in /",
            "rejoin it with `tidemark sweep",
        ],
    );
    let grace = env.run(&[
        "sweep",
        "--config",
        "study.toml",
        "--storage",
        "other.log",
        "--set",
        "sweep.grace=1",
    ]);
    grace.fails_with(2, &["sweep.grace", "at least twice sweep.heartbeat"]);
    env.write(
        "bad.log",
        "{\"op_code\":0,\"worker_id\":\"w\",\"study_name\":\"s\",\"directions\":[1]}\n{oops\n{}\n",
    );
    env.run(&["report", "bad.log"])
        .fails_with(2, &["bad.log", "record 2: not JSON"]);
    // --storage where it cannot apply, and an empty one: refused before anything is written.
    env.write("plain.toml", SMALL);
    let plain = env.run(&["sweep", "--config", "plain.toml", "--storage", "p.log"]);
    plain.fails_with(2, &["--storage p.log: plain.toml has no [sweep] table"]);
    assert!(!env.path("p.log").exists());
    let empty = env.run(&["sweep", "--config", "study.toml", "--storage", ""]);
    empty.fails_with(
        2,
        &["error: --storage: an empty path; give a journal file's path"],
    );
    // A device holds no journal: exit 2, not the storage's 75 (a retry would not mend it).
    let device = env.run(&["sweep", "--config", "study.toml", "--storage", "/dev/null"]);
    device.fails_with(
        2,
        &["--storage /dev/null: not a regular file; a journal is a file"],
    );
}

/// A `redis-server` of the test's own on a free port of localhost, stopped on drop; `None`
/// where Debian's `redis-server` is not installed (then the test says so, and fails where
/// TIDEMARK_REQUIRE_REDIS=1, as in CI).
struct RedisServer {
    child: Child,
    url: String,
}

impl RedisServer {
    fn start(dir: &std::path::Path) -> Option<RedisServer> {
        RedisServer::start_with(dir, &[])
    }

    /// A server started with `args` besides (`--requirepass PASSWORD`).
    fn start_with(dir: &std::path::Path, args: &[&str]) -> Option<RedisServer> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let spawned = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .args(["--appendonly", "no"])
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .spawn();
        let Ok(child) = spawned else {
            let required = std::env::var("TIDEMARK_REQUIRE_REDIS").as_deref() == Ok("1");
            assert!(
                !required,
                "TIDEMARK_REQUIRE_REDIS=1 and no redis-server on PATH"
            );
            eprintln!("skipped: no redis-server on PATH (apt-get install redis-server)");
            return None;
        };
        let server = RedisServer {
            child,
            url: format!("redis://127.0.0.1:{port}"),
        };
        let start = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(start.elapsed().as_secs() < 10, "redis-server did not start");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Some(server)
    }

    /// The journal's records, as Optuna's Redis backend reads them.
    fn records(&self) -> Vec<String> {
        let mut con = redis::Client::open(self.url.as_str())
            .unwrap()
            .get_connection()
            .unwrap();
        let last: i64 = redis::Commands::get(&mut con, ":log_number").unwrap();
        (0..=last)
            .map(|n| redis::Commands::get(&mut con, format!(":log:{n}")).unwrap())
            .collect()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn two_workers_share_a_tpe_study_through_redis() {
    let env = Env::new();
    let Some(server) = RedisServer::start(&env.path(".")) else {
        return;
    };
    config(&env, 8, 2, "");
    workers(&env, 2, &server.url);
    env.write("journal.log", &(server.records().join("\n") + "\n"));
    let trials = replay(&env);
    all_completed_once(&trials, 8);
    let drawn = trials
        .iter()
        .filter(|t| t.system.contains_key("tidemark:drawn_from"));
    assert_eq!(
        drawn.count(),
        4,
        "TPE drew the trials past its random start"
    );
    let report = env.run(&["report", &server.url]);
    assert!(
        report
            .stdout()
            .contains("report: study small: 8 trials: 8 completed"),
        "{}{}",
        report.stdout(),
        report.stderr()
    );
}

/// The pid the journal records for the first worker that joined it.
fn killed_pid(env: &Env) -> u64 {
    let text = std::fs::read_to_string(env.path("journal.log")).unwrap();
    (text.lines())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|op| op["op_code"] == 3)
        .find_map(|op| {
            let attr = op["system_attr"].as_object()?;
            let (key, value) = attr.iter().next()?;
            key.starts_with("tidemark:process:")
                .then(|| value["pid"].as_u64())
                .flatten()
        })
        .expect("the worker's process is recorded")
}

/// A worker alive but silent (stopped with SIGSTOP mid-trial) is not known dead: the next
/// worker takes its trial over once it has been silent for the grace period, from its
/// checkpoint.
#[test]
fn a_silent_worker_s_trial_is_taken_over_after_the_grace_period() {
    let env = Env::new();
    config(&env, 3, 2, "heartbeat = 0.2\ngrace = 1.0");
    let vars = [
        ("TIDEMARK_FAILPOINT", "step:50:STOP".to_string()),
        (
            "TIDEMARK_FAILPOINT_COUNT",
            env.path("count").display().to_string(),
        ),
    ];
    let mut stopped = worker(&env, "a", "journal.log", &vars);
    let stat = format!("/proc/{}/stat", stopped.id());
    let start = std::time::Instant::now();
    while !std::fs::read_to_string(&stat).is_ok_and(|s| s.contains(") T ")) {
        assert!(start.elapsed().as_secs() < 60, "the worker did not stop");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let other = worker(&env, "a", "journal.log", &[])
        .wait_with_output()
        .unwrap();
    stopped.kill().unwrap();
    stopped.wait().unwrap();
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert!(other.status.success(), "{stderr}");
    assert!(
        stderr.contains("trial-002 taken over from worker") && stderr.contains("over 1 s"),
        "{stderr}"
    );
    let trials = replay(&env);
    all_completed_once(&trials, 3);
    let resumed = events(&env, "out-a", "trial-002");
    assert_eq!(resumed, ["run_start", "resume", "memory_action", "run_end"]);
}

/// A grid study is created in its search's order, largest probed step first: the first worker
/// probes the plan and records the order in the study (`tidemark:order`), and every worker
/// creates the next trial of that order, whoever it is.
#[test]
fn a_study_creates_its_trials_largest_first_in_the_order_its_first_worker_recorded() {
    let env = Env::new();
    // Trials 1 and 2 are the small model, 3 and 4 the large one.
    let text = format!(
        "{SMALL}\n[sweep]\nmethod = \"grid\"\nmonitor = \"val_loss\"\n[sweep.vary]\n\
         model.hidden = [[8], [256, 256]]\ntrain.lr = [3e-3, 1e-3]\n"
    );
    let text = text.replace("samples = 1200", "samples = 300");
    env.write("study.toml", &text.replace("epochs = 3", "epochs = 1"));
    workers(&env, 2, "journal.log");
    let text = std::fs::read_to_string(env.path("journal.log")).unwrap();
    let order: Vec<u64> = (text.lines())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|op| op["op_code"] == 3 && op["system_attr"].get("tidemark:order").is_some())
        .map(|op| {
            let order = op["system_attr"]["tidemark:order"].as_array().unwrap();
            order.iter().map(|n| n.as_u64().unwrap()).collect()
        })
        .expect("the study's order is recorded");
    let mut sizes = [order[..2].to_vec(), order[2..].to_vec()];
    sizes.iter_mut().for_each(|s| s.sort_unstable());
    assert_eq!(sizes, [[3, 4], [1, 2]], "largest first: {order:?}");
    let created: Vec<u64> = replay(&env).iter().map(|t| t.number as u64).collect();
    assert_eq!(
        created, order,
        "the trials were created in the recorded order"
    );
    for t in replay(&env) {
        assert_eq!(t.state, 1, "{t:?}");
    }
    // A worker that joins the finished study probes nothing: the order is the study's.
    let late = env.run(&[
        "sweep",
        "--config",
        "study.toml",
        "--storage",
        "journal.log",
    ]);
    assert_eq!(late.code(), 0, "{}", late.stderr());
    assert!(!late.stderr().contains("probed"), "{}", late.stderr());
}

#[test]
fn a_search_in_one_process_writes_its_journal_as_sweep_json_ranks_it() {
    let env = Env::new();
    config(&env, 6, 3, "[sweep.prune]\nmethod = \"asha\"");
    let run = env.run(&["sweep", "--config", "study.toml"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    std::fs::copy(
        env.path("runs/small-sweep/journal.log"),
        env.path("journal.log"),
    )
    .unwrap();
    let trials = replay(&env);
    let sweep: Value = serde_json::from_str(
        &std::fs::read_to_string(env.path("runs/small-sweep/sweep.json")).unwrap(),
    )
    .unwrap();
    let rows = sweep["trials"].as_array().unwrap();
    assert_eq!(trials.len(), rows.len());
    for row in rows {
        let t = trials
            .iter()
            .find(|t| t.number as u64 == row["trial"])
            .unwrap();
        let state = match row["status"].as_str().unwrap() {
            "completed" => 1,
            "pruned" => 2,
            other => panic!("{other}"),
        };
        assert_eq!((t.state, t.value), (state, row["monitored"].as_f64()));
        let curve: BTreeMap<i64, f64> = (env
            .snapshots(&format!(
                "runs/small-sweep/{}",
                row["name"].as_str().unwrap()
            ))
            .iter())
        .filter(|s| s["event"] == "epoch")
        .map(|s| {
            (
                s["epoch"].as_i64().unwrap(),
                s["val_loss"].as_f64().unwrap(),
            )
        })
        .collect();
        assert_eq!(t.intermediate, curve, "{}", row["name"]);
        assert!(!curve.is_empty());
    }
    assert!(trials.iter().any(|t| t.state == 2), "ASHA pruned some");
}

/// A writer killed half-way through a record leaves a cut line at the journal's end; the next
/// worker cuts it off before appending, so two more workers complete the study, every trial
/// once, and every line of the journal reads (as Optuna's reader needs: it stops at a bad
/// line that is not the last).
#[test]
fn a_writer_killed_mid_record_leaves_a_journal_the_next_workers_complete() {
    // Killed in the study's creation, in a trial's, and in an epoch's report.
    for pass in [2, 6, 10] {
        killed_mid_record(pass);
    }
}

fn killed_mid_record(pass: usize) {
    let env = Env::new();
    config(&env, 4, 2, "heartbeat = 0.2\ngrace = 1.0");
    let vars = [
        ("TIDEMARK_FAILPOINT", format!("append:{pass}:KILL")),
        (
            "TIDEMARK_FAILPOINT_COUNT",
            env.path("count").display().to_string(),
        ),
    ];
    let killed = worker(&env, "a", "journal.log", &vars)
        .wait_with_output()
        .unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&killed.status),
        Some(9)
    );
    let text = std::fs::read_to_string(env.path("journal.log")).unwrap();
    assert!(!text.ends_with('\n'), "killed mid-record: {text}");
    // A worker waiting for the dead writer's lock says so after two seconds; the lock is
    // then removed, as a waiter breaks it after 30 s (the file's unit test).
    let said = std::fs::File::create(env.path("waiter.err")).unwrap();
    let mut waiter = Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args([
            "sweep",
            "--config",
            "study.toml",
            "--storage",
            "journal.log",
        ])
        .args(["--out", "out-waiter"])
        .current_dir(env.path("."))
        .stdout(Stdio::null())
        .stderr(said)
        .spawn()
        .unwrap();
    let waits = "sweep: waiting for the journal's lock journal.log.lock: another process holds \
                 it, or one killed while writing left it, which is broken once the journal has \
                 not changed for 30 s";
    super::wait_for(&mut waiter, "the waiter's line", || {
        let text = std::fs::read_to_string(env.path("waiter.err")).unwrap_or_default();
        text.contains(waits).then_some(())
    });
    std::fs::remove_file(env.path("journal.log.lock")).unwrap();
    assert!(waiter.wait().unwrap().success());
    workers(&env, 2, "journal.log");
    let text = std::fs::read_to_string(env.path("journal.log")).unwrap();
    assert!(text.ends_with('\n'));
    // A trial is created whole in one record, so none is left half made: the four complete
    // once each, and nothing else is in the study.
    all_completed_once(&replay(&env), 4);
    let report = env.run(&["report", "journal.log"]);
    assert_eq!(report.code(), 0, "{}", report.stderr());
    assert!(
        report.stdout().contains("4 trials: 4 completed"),
        "{}",
        report.stdout()
    );
}

/// A Redis server lost while a worker trains is the storage failing, not a bad config: the
/// worker ends with exit code 75 (`EX_TEMPFAIL`, for a job's retry policy) and one line that
/// names the storage and says to rejoin, and its trial's run keeps its checkpoint.
#[test]
fn a_storage_lost_mid_search_exits_75_saying_to_rejoin_not_bad_config() {
    let env = Env::new();
    let Some(mut server) = RedisServer::start(&env.path(".")) else {
        return;
    };
    config(&env, 4, 6, "");
    let worker = worker(&env, "a", &server.url, &[]);
    // Once its first trial has a checkpoint, the server goes.
    let checkpoint = env.path("out-a/small-sweep/trial-001/checkpoints/latest");
    let start = std::time::Instant::now();
    while !checkpoint.exists() {
        assert!(start.elapsed().as_secs() < 60, "no trial checkpointed");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let output = worker.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(75), "{stderr}");
    let last = stderr.trim_end().lines().last().unwrap();
    let storage = format!("error: --storage {}: Redis: ", server.url);
    assert!(last.starts_with(&storage), "{last}");
    assert!(last.contains("rejoin once the storage is back"), "{last}");
    assert!(last.chars().count() < 300, "{last}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(checkpoint.exists(), "{stderr}");
}

/// A `--storage` that waiting cannot mend is the argument's, not the storage failing: exit code
/// 2 (not 75, which a job array would retry for ever), one line naming the storage and what to
/// fix, and nothing written. A journal file's path that is a directory, or under a file; a
/// Redis URL without a host; a server that wants a password, given none or the wrong one; a
/// journal's key holding another type.
#[test]
fn a_storage_that_waiting_cannot_mend_exits_2_saying_what_to_fix() {
    let env = Env::new();
    config(&env, 2, 1, "");
    let sweep = |storage: &str| {
        env.run(&[
            "sweep",
            "--config",
            "study.toml",
            "--storage",
            storage,
            "--out",
            "out",
        ])
    };
    std::fs::create_dir(env.path("adir")).unwrap();
    sweep("adir").fails_with(
        2,
        &[
            "--storage adir: adir: Is a directory",
            "give the path of a journal file",
        ],
    );
    env.write("afile", "");
    sweep("afile/study.log").fails_with(
        2,
        &[
            "--storage afile/study.log: afile",
            "a file stands where its path has a directory",
        ],
    );
    sweep("redis://").fails_with(
        2,
        &["--storage redis://: Redis: ", "give redis://HOST:PORT"],
    );
    let password = "give the server's password in the URL: redis://:PASSWORD@HOST:PORT";
    let Some(server) = RedisServer::start_with(&env.path("."), &["--requirepass", "s3cret"]) else {
        return;
    };
    sweep(&server.url).fails_with(
        2,
        &[&format!("--storage {}: Redis: ", server.url), password],
    );
    let wrong = server.url.replace("redis://", "redis://:wrong@");
    // Its password is never shown: the line lands in a job array's logs.
    let shown = server.url.replace("redis://", "redis://:***@");
    let out = sweep(&wrong);
    out.fails_with(2, &[&format!("--storage {shown}: Redis: "), password]);
    assert!(!out.stderr().contains("wrong"), "{}", out.stderr());
    // The journal's counter holds a word, then a list: no journal writes either.
    let url = server.url.replace("redis://", "redis://:s3cret@");
    let mut con = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let holds = "a key of the journal's (:log_number, :log:N) holds what no journal writes";
    let _: () = redis::Commands::set(&mut con, ":log_number", "many").unwrap();
    let shown = server.url.replace("redis://", "redis://:***@");
    sweep(&url).fails_with(2, &[&format!("--storage {shown}: Redis: "), holds]);
    let _: i64 = redis::Commands::del(&mut con, ":log_number").unwrap();
    let _: i64 = redis::Commands::rpush(&mut con, ":log_number", "1").unwrap();
    sweep(&url).fails_with(2, &["WRONGTYPE", holds]);
    assert!(!env.path("out").exists(), "nothing was written");
}
