//! One device, many runs: independent `tidemark train` processes share a device's budget
//! through the lease registry (`src/lease/`), each enforcing its lease as its limit.

use super::*;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// `tidemark` with `args` in `env`'s directory, under the registry `leases` names (`None`: the
/// user's own, in `env`'s `XDG_RUNTIME_DIR`) and the `budget` `TIDEMARK_DEVICE_BUDGET` sets
/// (`None`: none).
fn tidemark(env: &Env, args: &[&str], leases: Option<&str>, budget: Option<&str>) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tidemark"));
    command
        .args(args)
        .current_dir(env.dir.path())
        .env("XDG_RUNTIME_DIR", env.dir.path());
    match leases {
        Some(dir) => command.env("TIDEMARK_LEASES", env.path(dir)),
        None => command.env_remove("TIDEMARK_LEASES"),
    };
    match budget {
        Some(budget) => command.env("TIDEMARK_DEVICE_BUDGET", budget),
        None => command.env_remove("TIDEMARK_DEVICE_BUDGET"),
    };
    command
}

/// `tidemark` with `args` under the registry `env/leases` and `budget` (empty: none), its
/// output piped.
fn spawn(env: &Env, args: &[&str], budget: &str) -> Child {
    (tidemark(env, args, Some("leases"), Some(budget)))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `train --config small.toml` with a 32 MiB limit (its lease), `epochs` and `name`, under
/// `budget` (empty: the registry's), its output piped.
fn limited(env: &Env, epochs: &str, name: &str, budget: &str) -> Child {
    let (epochs, name) = (format!("train.epochs={epochs}"), format!("run.name={name}"));
    let args = [
        "train",
        "--config",
        "small.toml",
        "--set",
        "memory.limit=32MiB",
    ];
    spawn(
        env,
        &[&args[..], &["--set", &epochs, "--set", &name]].concat(),
        budget,
    )
}

/// `tidemark leases` with `args`, on the registry `env/leases`.
fn leases(env: &Env, args: &[&str]) -> Run {
    let args = [&["leases"][..], args].concat();
    Run(tidemark(env, &args, Some("leases"), None).output().unwrap())
}

/// `tidemark` with `args` under `budget`, run to its end.
fn run_leased(env: &Env, args: &[&str], budget: &str) -> Run {
    Run(tidemark(env, args, Some("leases"), Some(budget))
        .output()
        .unwrap())
}

/// A child's stderr lines as they come, each with when it came.
fn lines_of(child: &mut Child) -> mpsc::Receiver<(Instant, String)> {
    let stderr = child.stderr.take().unwrap();
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if send.send((Instant::now(), line)).is_err() {
                break;
            }
        }
    });
    receive
}

/// Waits up to `within` for a line containing `needle`; returns when it came.
fn wait_for(lines: &mpsc::Receiver<(Instant, String)>, needle: &str, within: Duration) -> Instant {
    let end = Instant::now() + within;
    let mut seen = Vec::new();
    while let Ok((at, line)) = lines.recv_timeout(end.saturating_duration_since(Instant::now())) {
        if line.contains(needle) {
            return at;
        }
        seen.push(line);
    }
    panic!("no line with {needle:?} in {within:?}: {seen:#?}");
}

/// The bytes of the leases in `dir` (a device's directory) now, read under its admission
/// lock as a run's admission reads them.
fn leased(dir: &Path) -> u64 {
    let Ok(lock) = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("admit.lock"))
    else {
        return 0;
    };
    lock.lock().unwrap();
    let mut sum = 0;
    for entry in std::fs::read_dir(dir).unwrap().map_while(Result::ok) {
        let name = entry.file_name().into_string().unwrap();
        if name.starts_with("lease-") {
            if let Ok(text) = std::fs::read_to_string(entry.path()) {
                let first = text.lines().next().unwrap_or_default();
                let record: Value = serde_json::from_str(first).unwrap();
                sum += record["bytes"].as_u64().unwrap();
            }
        }
    }
    sum
}

/// Holds a lease file in `env/leases/host` as a live holder would (this test process's lock)
/// with `text` as its record; dropped, the lock goes.
fn held_file(env: &Env, text: &str) -> (File, PathBuf) {
    let dir = env.path("leases/host");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("lease-{}-1.json", std::process::id()));
    let mut file = File::create(&path).unwrap();
    writeln!(file, "{text}").unwrap();
    file.lock().unwrap();
    (file, path)
}

fn config(env: &Env, name: &str, hidden: &str) {
    env.write(
        &format!("{name}.toml"),
        &SMALL
            .replace("name = \"small\"", &format!("name = \"{name}\""))
            .replace("hidden = [32]", &format!("hidden = {hidden}"))
            .replace("epochs = 3", "epochs = 2"),
    );
}

#[test]
fn eight_runs_under_a_budget_of_about_three_finish_inside_their_leases_with_their_losses_alone() {
    let env = Env::new();
    let sizes = [
        "[32]",
        "[64]",
        "[128]",
        "[256]",
        "[512]",
        "[64, 64]",
        "[256, 256]",
        "[512, 256]",
    ];
    for (i, hidden) in sizes.iter().enumerate() {
        config(&env, &format!("r{i}"), hidden);
    }
    runs_under_three(&env, sizes.len(), "host");
}

/// Runs `r0.toml` ... in `env` alone, each under a budget that holds it (its lease and its
/// losses), then all at once under three times their mean lease on `device`: each finishes
/// with its losses alone and its peak inside its lease, some wait, and the leases held at once
/// (read from the registry every 5 ms) never exceed the budget.
pub(super) fn runs_under_three(env: &Env, runs: usize, device: &str) {
    let mut alone = Vec::new();
    for i in 0..runs {
        let file = format!("r{i}.toml");
        let args = ["train", "--config", &file, "--set", "run.output_dir=alone"];
        let run = run_leased(env, &args, &format!("{device}=4GiB"));
        assert_eq!(run.code(), 0, "{}", run.stderr());
        let summary = env.summary(&format!("alone/r{i}"));
        alone.push((num(&summary, "limit_bytes"), num(&summary, "final_loss")));
    }
    let mean = alone.iter().map(|(lease, _)| lease).sum::<f64>() / runs as f64;
    let budget = (mean * 3.0) as u64;
    let largest = alone.iter().map(|(lease, _)| *lease as u64).max().unwrap();
    assert!(
        largest * 10 < budget * 12,
        "every run fits alone: {alone:?} under {budget}"
    );
    let spec = format!("{device}={budget}");
    let done = Arc::new(AtomicBool::new(false));
    let most = Arc::new(AtomicU64::new(0));
    let poll = {
        let (done, most) = (done.clone(), most.clone());
        let dir = env.path(&format!("leases/{device}"));
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                most.fetch_max(leased(&dir), Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let started = Instant::now();
    let children: Vec<Child> = (0..runs)
        .map(|i| spawn(env, &["train", "--config", &format!("r{i}.toml")], &spec))
        .collect();
    // Each one's lines, read to its end: a few lines, which no pipe fills.
    let children: Vec<String> = (children.into_iter().enumerate())
        .map(|(i, mut child)| {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut text).unwrap();
            assert!(child.wait().unwrap().success(), "r{i}: {text}");
            text
        })
        .collect();
    let wall = started.elapsed();
    done.store(true, Ordering::SeqCst);
    poll.join().unwrap();
    let waited = children
        .iter()
        .filter(|text| text.contains("waiting for"))
        .count();
    assert!(waited > 0, "some run waited for room: {children:#?}");
    let most = most.load(Ordering::SeqCst);
    assert!(most > 0 && most <= budget, "leases held {most} of {budget}");
    for (i, (_, loss)) in alone.iter().enumerate() {
        let summary = env.summary(&format!("runs/r{i}"));
        assert_eq!(
            num(&summary, "final_loss"),
            *loss,
            "r{i} trains as it does alone"
        );
        assert_eq!(summary["status"], "completed");
        // What a limit reads: the peak in use on the host, the pools' pages on a device.
        let peak = match summary["memory_source"].as_str() {
            Some("host") => num(&summary, "peak_bytes_in_use"),
            _ => num(&summary, "peak_bytes_reserved"),
        };
        let lease = num(&summary, "limit_bytes");
        assert!(peak <= lease, "r{i}: peak {peak} over its lease {lease}");
    }
    // Every lease given back with its run.
    assert_eq!(leased(&env.path(&format!("leases/{device}"))), 0);
    eprintln!("{runs} runs under {budget} B on {device}: {wall:?}, {waited} waited");
}

#[test]
fn a_holder_killed_with_sigkill_frees_its_lease_for_the_next_within_a_second() {
    let env = Env::small();
    let budget = "host=48MiB";
    let mut holder = limited(&env, "500", "holder", budget);
    let held = lines_of(&mut holder);
    wait_for(&held, "memory lease: 32.0 MiB", Duration::from_secs(60));
    let mut next = limited(&env, "1", "next", budget);
    let lines = lines_of(&mut next);
    wait_for(
        &lines,
        "waiting for a memory lease of 32.0 MiB on host",
        Duration::from_secs(60),
    );
    let killed = Instant::now();
    holder.kill().unwrap();
    holder.wait().unwrap();
    let leased = wait_for(&lines, "memory lease: 32.0 MiB", Duration::from_secs(10));
    let after = leased.duration_since(killed);
    assert!(
        after < Duration::from_secs(1),
        "the lease came {after:?} after the kill"
    );
    assert!(next.wait().unwrap().success());
}

#[test]
fn a_lease_that_cannot_fit_exits_3_and_a_bad_budget_or_registry_exits_2_each_naming_it() {
    let env = Env::small();
    let train = |extra: &[&str], budget: &str| {
        let mut args = vec!["train", "--config", "small.toml", "--set", "train.epochs=1"];
        args.extend_from_slice(extra);
        run_leased(&env, &args, budget)
    };
    // Larger than the whole budget.
    train(&["--set", "memory.limit=64MiB"], "host=32MiB").fails_with(
        3,
        &["a memory lease of 64.0 MiB on host is larger than its whole budget, 32.0 MiB"],
    );
    // Budgets that cannot be.
    train(&[], "host=0").fails_with(2, &["TIDEMARK_DEVICE_BUDGET=host=0", "host: must be"]);
    train(&[], "host=lots").fails_with(2, &["TIDEMARK_DEVICE_BUDGET=host=lots"]);
    train(&[], "host=1000TiB").fails_with(2, &["is larger than the device"]);
    // No room now, and the run said not to wait: who holds what.
    let record = |budget: u64, bytes: u64| {
        format!(
            r#"{{"version":1,"pid":{},"since":1.0,"bytes":{bytes},"budget":{budget},"device":"host","command":"test","probe":false}}"#,
            std::process::id()
        )
    };
    let (file, path) = held_file(&env, &record(48 << 20, 40 << 20));
    train(
        &["--set", "memory.limit=32MiB", "--set", "memory.wait=false"],
        "host=48MiB",
    )
    .fails_with(
        3,
        &[
            "waiting for a memory lease of 32.0 MiB on host",
            &format!("pid {}", std::process::id()),
            "memory.wait = false",
        ],
    );
    // Another budget for the same device.
    train(&["--set", "memory.limit=4MiB"], "host=64MiB")
        .fails_with(2, &["one device has one budget", path.to_str().unwrap()]);
    drop(file);
    // A held lease that is not one: refused, and kept.
    let (file, path) = held_file(&env, "not json");
    train(&["--set", "memory.limit=4MiB"], "host=48MiB").fails_with(
        2,
        &[path.to_str().unwrap(), "is held but is not a lease record"],
    );
    assert!(path.exists());
    drop(file);
    // The same file with no holder: removed, whatever it says, and the run goes on (sized by
    // its own probe: no limit of the test's, which a machine's caches could breach).
    let run = train(&[], "host=48MiB");
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert!(!path.exists());
    // A directory where a lease should be, a file where the registry should be.
    std::fs::create_dir_all(env.path("leases/host/lease-1-1.json")).unwrap();
    train(&["--set", "memory.limit=4MiB"], "host=48MiB")
        .fails_with(2, &["leases/host/lease-1-1.json", "is not a regular file"]);
    std::fs::remove_dir_all(env.path("leases")).unwrap();
    env.write("leases", "");
    train(&[], "host=48MiB").fails_with(2, &["leases", "is not a directory"]);
    // The default registry, open to other users.
    std::fs::remove_file(env.path("leases")).unwrap();
    let own = env.path("tidemark/leases");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::set_permissions(&own, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let args = [
        "train",
        "--config",
        "small.toml",
        "--set",
        "run.name=refused",
    ];
    let output = tidemark(&env, &args, None, Some("host=48MiB"))
        .output()
        .unwrap();
    Run(output).fails_with(2, &["tidemark/leases", "is open to other users (mode 755)"]);
    // A refused run made no run directory.
    assert!(!env.path("runs/refused").exists());
}

#[test]
fn without_a_budget_no_lease_is_taken_and_nothing_is_written() {
    let env = Env::small();
    let args = ["train", "--config", "small.toml", "--set", "train.epochs=1"];
    let output = tidemark(&env, &args, None, None).output().unwrap();
    let run = Run(output);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert!(!run.stderr().contains("memory lease"), "{}", run.stderr());
    assert!(!env.path("tidemark").exists(), "no registry made");
    assert!(env.summary("runs/small")["limit_bytes"].is_null());
}

#[test]
fn the_view_lists_each_holder_and_a_budget_set_once_holds_for_every_run() {
    let env = Env::small();
    let none = leases(&env, &[]);
    assert_eq!(none.code(), 0, "{}", none.stderr());
    assert!(
        none.stdout().contains("no lease registry"),
        "{}",
        none.stdout()
    );
    assert!(!env.path("leases").exists(), "a look makes nothing");
    leases(&env, &["--budget", "gpu=1GiB"])
        .fails_with(2, &["--budget gpu=1GiB", "no device \"gpu\""]);
    // A budget larger than the machine would refuse every later run: refused now.
    leases(&env, &["--budget", "host=4096TiB"]).fails_with(
        2,
        &[
            "--budget host=4096TiB: 4096.0 TiB is larger than the device,",
            "nothing was set",
        ],
    );
    assert!(
        !env.path("leases").exists(),
        "a refused budget makes nothing"
    );
    let set = leases(&env, &["--budget", "host=48MiB"]);
    assert_eq!(set.code(), 0, "{}", set.stderr());
    assert!(
        set.stdout()
            .starts_with("host: budget 48.0 MiB for every tidemark run on it"),
        "{}",
        set.stdout()
    );
    // A run with no budget of its own takes its lease under the registry's.
    let mut holder = limited(&env, "500", "holder", "");
    let lines = lines_of(&mut holder);
    wait_for(
        &lines,
        "memory lease: 32.0 MiB of host's budget of 48.0 MiB",
        Duration::from_secs(60),
    );
    wait_for(&lines, "epoch 1", Duration::from_secs(60));
    let view = leases(&env, &[]).stdout();
    assert!(
        view.starts_with("host: budget 48.0 MiB; 1 lease(s) hold 32.0 MiB, 0 run(s) waiting\n"),
        "{view}"
    );
    let line = view.lines().nth(1).unwrap_or_default();
    assert!(
        line.starts_with(&format!("  pid {}  32.0 MiB  ", holder.id())),
        "{view}"
    );
    assert!(line.contains("runs/holder: in use"), "{view}");
    assert!(line.ends_with("train --config small.toml --set memory.limit=32MiB --set train.epochs=500 --set run.name=holder"), "{view}");
    // A second run waits, and is listed as waiting.
    let mut next = limited(&env, "1", "next", "");
    let next_lines = lines_of(&mut next);
    wait_for(
        &next_lines,
        "waiting for a memory lease of 32.0 MiB on host",
        Duration::from_secs(60),
    );
    let view = leases(&env, &[]).stdout();
    assert!(
        view.contains(&format!("  waiting: pid {} for 32.0 MiB", next.id())),
        "{view}"
    );
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert!(next.wait().unwrap().success());
    let view = leases(&env, &[]).stdout();
    assert!(
        view.starts_with("host: budget 48.0 MiB; 0 lease(s) hold 0 B, 0 run(s) waiting"),
        "{view}"
    );
}

#[test]
fn a_parallel_search_and_two_trainings_share_one_budget() {
    let env = Env::small();
    let grid = SMALL.replace("epochs = 3", "epochs = 2")
        + "\n[sweep]\n[sweep.vary]\ntrain.lr = [0.01, 0.003, 0.001, 0.0003]\n";
    env.write("grid.toml", &grid);
    let budget = 24u64 << 20;
    let spec = format!("host={budget}");
    let done = Arc::new(AtomicBool::new(false));
    let most = Arc::new(AtomicU64::new(0));
    // Whether the search's parent probed its trials under a provisional lease.
    let parent_probed = Arc::new(AtomicBool::new(false));
    let poll = {
        let (done, most, parent) = (done.clone(), most.clone(), parent_probed.clone());
        let dir = env.path("leases/host");
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                most.fetch_max(leased(&dir), Ordering::SeqCst);
                if provisional(&dir)
                    .iter()
                    .any(|(_, c)| c.contains(" sweep --config"))
                {
                    parent.store(true, Ordering::SeqCst);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let mut children = vec![spawn(
        &env,
        &["sweep", "--config", "grid.toml", "--parallel", "2"],
        &spec,
    )];
    for name in ["a", "b"] {
        let set = format!("run.name={name}");
        children.push(spawn(
            &env,
            &["train", "--config", "small.toml", "--set", &set],
            &spec,
        ));
    }
    for mut child in children {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut text).unwrap();
        assert!(child.wait().unwrap().success(), "{text}");
    }
    done.store(true, Ordering::SeqCst);
    poll.join().unwrap();
    let most = most.load(Ordering::SeqCst);
    assert!(most > 0 && most <= budget, "leases held {most} of {budget}");
    assert!(
        parent_probed.load(Ordering::SeqCst),
        "the search probed its trials outside any lease"
    );
    let mut dirs: Vec<String> = (1..=4)
        .map(|i| format!("runs/small-sweep/trial-00{i}"))
        .collect();
    dirs.extend(["runs/a".to_string(), "runs/b".to_string()]);
    for dir in dirs {
        let summary = env.summary(&dir);
        assert_eq!(summary["status"], "completed", "{dir}");
        let (peak, lease) = (
            num(&summary, "peak_bytes_in_use"),
            num(&summary, "limit_bytes"),
        );
        assert!(peak <= lease, "{dir}: peak {peak} over its lease {lease}");
    }
    assert_eq!(leased(&env.path("leases/host")), 0);
    // The search packed its trials under the device's budget, not its own default share.
    let text = std::fs::read_to_string(env.path("runs/small-sweep/sweep.json")).unwrap();
    let sweep: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(sweep["budget_bytes"].as_u64(), Some(budget), "{sweep}");
}

#[test]
fn a_probed_run_whose_lease_does_not_fit_once_set_up_ends_as_a_failed_run() {
    let env = Env::small();
    // This run's lease, alone (it moves with the machine's caches).
    let alone = [
        "train",
        "--config",
        "small.toml",
        "--set",
        "run.output_dir=alone",
    ];
    assert_eq!(run_leased(&env, &alone, "host=4GiB").code(), 0);
    let lease = num(&env.summary("alone/small"), "limit_bytes") as u64;
    std::fs::remove_dir_all(env.path("leases")).unwrap();
    // Another run holds half of it, and the budget leaves 90% of it free: room to probe (as
    // much as the largest lease), not for the run's own lease.
    let (held, budget) = (lease / 2, lease / 2 + lease * 9 / 10);
    let record = format!(
        r#"{{"version":1,"pid":{},"since":1.0,"bytes":{held},"budget":{budget},"device":"host","command":"test","probe":false}}"#,
        std::process::id(),
    );
    let (_held, _) = held_file(&env, &record);
    let args = [
        "train",
        "--config",
        "small.toml",
        "--set",
        "memory.wait=false",
    ];
    let run = run_leased(&env, &args, &format!("host={budget}"));
    assert_eq!(run.code(), 3, "{}", run.stderr());
    // The run's own lines, then its error's.
    let stderr = run.stderr();
    let last = stderr.trim_end().lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: waiting for a memory lease of"),
        "{stderr}"
    );
    assert!(last.ends_with("; memory.wait = false"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Its directory was made: it ends as a failed run does, its summary written.
    let summary = env.summary("runs/small");
    assert_eq!(summary["status"], "failed", "{summary}");
    assert!(
        summary["error"]
            .as_str()
            .unwrap_or_default()
            .contains("memory.wait = false"),
        "{summary}"
    );
}

/// The provisional leases (`"probe": true`) in `dir` now: bytes and command.
fn provisional(dir: &Path) -> Vec<(u64, String)> {
    let entries = std::fs::read_dir(dir).into_iter().flatten();
    (entries.map_while(Result::ok))
        .filter(|e| e.file_name().to_string_lossy().starts_with("lease-"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter_map(|t| serde_json::from_str::<Value>(t.lines().next()?).ok())
        .filter(|r| r["probe"] == true)
        .map(|r| {
            (
                r["bytes"].as_u64().unwrap(),
                r["command"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_completed_run_is_remembered_and_the_next_of_its_shape_probes_under_its_lease() {
    let env = Env::small();
    let first = run_leased(
        &env,
        &["train", "--config", "small.toml", "--set", "run.name=first"],
        "host=1GiB",
    );
    assert_eq!(first.code(), 0, "{}", first.stderr());
    let summary = env.summary("runs/first");
    let host = env.path("leases/host");
    let known: Vec<PathBuf> = (std::fs::read_dir(&host).unwrap().map_while(Result::ok))
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("known-")
        })
        .collect();
    assert_eq!(known.len(), 1, "{known:?}");
    let remembered: Value =
        serde_json::from_str(&std::fs::read_to_string(&known[0]).unwrap()).unwrap();
    // Its lease, and its time an epoch: less than the run's wall time an epoch (no probe, no
    // set-up), and not nothing.
    assert_eq!(remembered["bytes"], summary["limit_bytes"], "{remembered}");
    let per_epoch = remembered["seconds_per_epoch"].as_f64().unwrap();
    let wall = num(&summary, "wall_time_s") / 3.0;
    assert!(per_epoch > 0.0 && per_epoch < wall, "{per_epoch} {wall}");
    let view = leases(&env, &[]).stdout();
    assert!(view.contains("  remembers 1 shape(s) of run"), "{view}");
    // The same shape under another name and seed probes under that lease, not the whole budget.
    let mut second = spawn(
        &env,
        &[
            "train",
            "--config",
            "small.toml",
            "--set",
            "run.name=second",
            "--set",
            "run.seed=5",
        ],
        "host=1GiB",
    );
    let mut seen = Vec::new();
    while second.try_wait().unwrap().is_none() {
        seen.extend(provisional(&host).into_iter().map(|(bytes, _)| bytes));
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(second.wait().unwrap().success());
    assert!(!seen.is_empty(), "the run's probe was never seen");
    assert!(
        seen.iter()
            .all(|&b| Some(b) == remembered["bytes"].as_u64()),
        "{seen:?} against {remembered}"
    );
    // Another shape is remembered beside it.
    let other = run_leased(
        &env,
        &[
            "train",
            "--config",
            "small.toml",
            "--set",
            "model.hidden=[48]",
        ],
        "host=1GiB",
    );
    assert_eq!(other.code(), 0, "{}", other.stderr());
    let view = leases(&env, &[]).stdout();
    assert!(view.contains("  remembers 2 shape(s) of run"), "{view}");
}

/// A child killed when dropped, so that a failed assertion leaves no process behind.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits up to a minute for a line containing `needle`, and returns it.
fn line_with(lines: &mpsc::Receiver<(Instant, String)>, needle: &str) -> String {
    let end = Instant::now() + Duration::from_secs(60);
    while let Ok((_, line)) = lines.recv_timeout(end.saturating_duration_since(Instant::now())) {
        if line.contains(needle) {
            return line;
        }
    }
    panic!("no line with {needle:?}");
}

#[test]
fn a_budget_read_from_the_device_is_what_it_has_free_and_the_runs_after_keep_it() {
    let env = Env::small();
    let set = leases(&env, &["--budget", "host=device"]);
    assert_eq!(set.code(), 0, "{}", set.stderr());
    assert!(
        set.stdout().starts_with(
            "host: budget \"device\" (what it has free when its first run asks) for every \
             tidemark run on it"
        ),
        "{}",
        set.stdout()
    );
    let view = leases(&env, &[]).stdout();
    assert!(
        view.starts_with("host: budget \"device\" (what it has free"),
        "{view}"
    );
    // The first run reads the machine's available memory as the budget.
    let available = || tidemark::memory::available_host_memory().unwrap() as f64;
    let before = available();
    let mut holder = Reaped(limited(&env, "500", "holder", ""));
    let lines = lines_of(&mut holder.0);
    let told = line_with(&lines, "memory lease: 32.0 MiB of host's budget of ");
    let after = available();
    let budget = told
        .split("budget of ")
        .nth(1)
        .and_then(|t| t.split(" (").next())
        .unwrap();
    let read = tidemark::config::parse_bytes(budget).unwrap() as f64;
    let (low, high) = (before.min(after), before.max(after));
    // Within what the machine had free around the read, give or take the tests beside it.
    assert!(
        read > 0.8 * low && read < 1.2 * high,
        "{told}: {low}..{high} free"
    );
    assert!(
        told.contains("leases/host/budget: what host had free as its first run asked)"),
        "{told}"
    );
    // A run after it (sized by its own probe), whose own reading differs, is admitted under
    // the same budget.
    let next = run_leased(
        &env,
        &[
            "train",
            "--config",
            "small.toml",
            "--set",
            "train.epochs=1",
            "--set",
            "run.name=next",
        ],
        "host=device",
    );
    assert_eq!(next.code(), 0, "{}", next.stderr());
    assert!(
        next.stderr()
            .contains(&format!("of host's budget of {budget} (")),
        "{}",
        next.stderr()
    );
    drop(holder);
}

#[test]
fn a_registry_the_run_may_not_write_is_refused_with_exit_2_naming_it() {
    let env = Env::small();
    let registry = env.path("group-leases");
    std::fs::create_dir(&registry).unwrap();
    let mode = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap()
    };
    // Root writes anywhere: the run is then made nobody's (setpriv), a user the directory
    // does not let in; another user runs as itself, the directory closed to it.
    let root = Command::new("id").arg("-u").output().unwrap().stdout == b"0\n";
    let mut command = match root {
        true => {
            let bin = env.path("tidemark");
            std::fs::copy(env!("CARGO_BIN_EXE_tidemark"), &bin).unwrap();
            mode(&bin, 0o755);
            mode(env.dir.path(), 0o755);
            let mut command = Command::new("setpriv");
            command
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(bin);
            command
        }
        false => {
            mode(&registry, 0o555);
            Command::new(env!("CARGO_BIN_EXE_tidemark"))
        }
    };
    let out = command
        .args(["train", "--config", "small.toml"])
        .current_dir(env.dir.path())
        .env("HOME", env.dir.path())
        .env("TIDEMARK_LEASES", &registry)
        .env("TIDEMARK_DEVICE_BUDGET", "host=1GiB")
        .output()
        .unwrap();
    let run = Run(out);
    run.fails_with(
        2,
        &[&format!(
            "{}: cannot be made: Permission denied",
            registry.join("host").display()
        )],
    );
    assert_eq!(
        run.stderr().trim_end().lines().count(),
        1,
        "{}",
        run.stderr()
    );
    assert!(!env.path("runs").exists(), "nothing of the run is made");
}
