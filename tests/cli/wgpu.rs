//! The memory layer against real CubeCL pools: wgpu, on Mesa's software Vulkan driver
//! (lavapipe) where there is no GPU. Built with `cargo test --features wgpu`.
//!
//! Without a wgpu adapter each test prints why it was skipped and returns; with
//! `TIDEMARK_REQUIRE_WGPU=1` (as in CI) a missing adapter fails the test instead.

use super::*;
use tidemark::config::{Backend, DeviceConfig};

pub(super) fn adapter_or_skip(test: &str) -> bool {
    match tidemark::backend::select(&DeviceConfig {
        backend: Backend::Wgpu,
        index: 0,
        execution: None,
    }) {
        Ok(_) => true,
        Err(e) if std::env::var_os("TIDEMARK_REQUIRE_WGPU").is_some() => {
            panic!("{test}: TIDEMARK_REQUIRE_WGPU is set but no wgpu adapter is available: {e}")
        }
        Err(e) => {
            eprintln!("skipped {test}: {e}");
            false
        }
    }
}

/// configs/pool.toml on wgpu.
pub(super) const POOL: &str = concat!(
    "[device]\nbackend = \"wgpu\"\n\n",
    include_str!("../../configs/pool.toml")
);

fn pool_run(env: &Env, name: &str, extra: &[&str]) -> (Run, Vec<Value>) {
    let name_set = format!("run.name={name}");
    let mut args = vec![
        "train",
        "--config",
        "pool.toml",
        "--quiet",
        "--set",
        name_set.as_str(),
    ];
    args.extend_from_slice(extra);
    let run = env.run(&args);
    let snaps = env.snapshots(&format!("runs/{name}"));
    (run, snaps)
}

fn event<'a>(snaps: &'a [Value], event: &str) -> &'a Value {
    snaps
        .iter()
        .find(|s| s["event"] == event)
        .unwrap_or_else(|| panic!("no {event} in {snaps:?}"))
}

#[test]
fn growth_reserves_with_need_and_preallocation_holds() {
    if !adapter_or_skip("growth_reserves_with_need_and_preallocation_holds") {
        return;
    }
    let env = Env::new();
    env.write("pool.toml", POOL);
    let (run, growth) = pool_run(&env, "growth", &[]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let (start, epoch) = (event(&growth, "run_start"), event(&growth, "epoch"));
    assert_eq!(epoch["source"], "cubecl-pool");
    let grew = num(epoch, "bytes_reserved") - num(start, "bytes_reserved");
    assert!(
        grew > (4 << 20) as f64,
        "growth: reserved rises with the first steps by {grew}"
    );

    let (run, pre) = pool_run(
        &env,
        "pre",
        &[
            "--set",
            "memory.policy=preallocate",
            "--set",
            "memory.preallocate=\"64MiB\"",
            "--set",
            "train.epochs=2",
        ],
    );
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let reserve = pre
        .iter()
        .find(|s| s["action"] == "reserve")
        .expect("a reserve event");
    assert!(
        reserve["detail"]
            .as_str()
            .unwrap()
            .starts_with("reserved 64.0 MiB"),
        "{reserve}"
    );
    let start = event(&pre, "run_start");
    assert!(
        num(start, "bytes_reserved") >= (64 << 20) as f64,
        "run_start shows the reservation: {start}"
    );
    // Training is served from the reserved pages and the filled launch-metadata cache:
    // reserved does not rise at all (docs/cubecl-memory.md).
    let most = pre
        .iter()
        .filter(|s| s["event"] == "epoch")
        .map(|s| num(s, "bytes_reserved"))
        .fold(0.0, f64::max);
    assert!(
        most <= num(start, "bytes_reserved"),
        "preallocated: reserved rose from {} to {most} (growth rose by {grew})",
        num(start, "bytes_reserved")
    );
}

#[test]
fn half_precision_runs_where_the_device_has_it_and_is_refused_where_not() {
    if !adapter_or_skip("half_precision_runs_where_the_device_has_it_and_is_refused_where_not") {
        return;
    }
    let env = Env::new();
    env.write("pool.toml", POOL);
    for precision in ["f16", "bf16"] {
        let run = env.run(&[
            "train",
            "--config",
            "pool.toml",
            "--set",
            &format!("run.name={precision}"),
            "--set",
            &format!("train.precision={precision}"),
        ]);
        if run.code() == 2 {
            // Lavapipe has f16 but not bf16; a GPU may have both.
            run.fails_with(
                2,
                &[&format!(
                    "train.precision = \"{precision}\" is not supported by the wgpu device"
                )],
            );
            assert!(!env.path(&format!("runs/{precision}")).exists());
            continue;
        }
        assert_eq!(run.code(), 0, "{}", run.stderr());
        let summary = env.summary(&format!("runs/{precision}"));
        assert_eq!(summary["precision"], precision);
        assert!(num(&summary, "final_val_accuracy") > 0.5, "{summary}");
    }
    assert!(
        env.path("runs/f16").exists(),
        "every Vulkan device tidemark targets computes in f16"
    );
}

/// Burn 0.22 picks fusion when it is built, so the two execution modes are two binaries:
/// this one (eager) and one built with `--features wgpu,fused`, named by
/// `TIDEMARK_FUSED_BIN` (README.md, "Development", says how to build it; CI leaves this
/// second build of the wgpu stack out, for its time; `TIDEMARK_REQUIRE_FUSED=1` makes its
/// absence a failure). The same run in both must agree epoch by epoch.
#[test]
fn eager_and_fused_execution_agree() {
    if !adapter_or_skip("eager_and_fused_execution_agree") {
        return;
    }
    let Some(fused) = fused_bin_or_skip("eager_and_fused_execution_agree") else {
        return;
    };
    let env = Env::new();
    env.write("pool.toml", POOL);
    let args = |mode: &str| {
        vec![
            "train".to_string(),
            "--config".into(),
            "pool.toml".into(),
            "--set".into(),
            format!("run.name={mode}"),
            "--set".into(),
            format!("device.execution={mode}"),
            "--set".into(),
            "train.epochs=2".into(),
        ]
    };
    let eager = env.run(&args("eager").iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(eager.code(), 0, "{}", eager.stderr());
    let run = in_env(&env, &fused).args(args("fused")).output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(env.summary("runs/eager")["execution"], "eager");
    assert_eq!(env.summary("runs/fused")["execution"], "fused");
    let epochs = |dir: &str| -> Vec<Value> {
        env.snapshots(dir)
            .into_iter()
            .filter(|s| s["event"] == "epoch")
            .collect()
    };
    let (e, f) = (epochs("runs/eager"), epochs("runs/fused"));
    assert_eq!(e.len(), 2);
    assert_eq!(e.len(), f.len());
    for (a, b) in e.iter().zip(&f) {
        for key in ["loss", "val_loss", "val_accuracy"] {
            let (x, y) = (num(a, key), num(b, key));
            assert!(
                (x - y).abs() <= 1e-4 * x.abs().max(1.0),
                "epoch {}: {key} eager {x} vs fused {y}",
                a["epoch"]
            );
        }
    }
}

/// The build with Burn's fusion that `TIDEMARK_FUSED_BIN` names; `None` (the test skips,
/// saying so) where it names none, unless `TIDEMARK_REQUIRE_FUSED` is set.
fn fused_bin_or_skip(test: &str) -> Option<std::ffi::OsString> {
    let bin = std::env::var_os("TIDEMARK_FUSED_BIN");
    if bin.is_none() {
        assert!(
            std::env::var_os("TIDEMARK_REQUIRE_FUSED").is_none(),
            "TIDEMARK_REQUIRE_FUSED is set but TIDEMARK_FUSED_BIN is not"
        );
        eprintln!("{test}: skipped (set TIDEMARK_FUSED_BIN to a build with --features wgpu,fused)");
    }
    bin
}

/// `bin` (another build than the test's) run in `env`'s directory, as `Env::run` runs the
/// test's.
fn in_env(env: &Env, bin: &std::ffi::OsStr) -> Command {
    let mut command = Command::new(bin);
    command
        .current_dir(env.path(""))
        .env("XDG_RUNTIME_DIR", env.path(""));
    command
}

/// Fused mode autotunes its kernels in its first epoch; a second run with the same kernel
/// cache takes every result from it and tunes nothing (CubeCL's autotune log, at its lowest
/// level, has a line for each tuning).
#[test]
fn a_second_fused_run_takes_autotune_s_results_from_the_kernel_cache() {
    let test = "a_second_fused_run_takes_autotune_s_results_from_the_kernel_cache";
    if !adapter_or_skip(test) {
        return;
    }
    let Some(fused) = fused_bin_or_skip(test) else {
        return;
    };
    let env = Env::new();
    env.write("pool.toml", POOL);
    let tuned = |run: &str| -> usize {
        let log = env.path(&format!("autotune-{run}.log"));
        env.write(
            "cubecl.toml",
            &format!(
                "[autotune.logger]\nlevel = \"minimal\"\nfile = \"{}\"\n",
                log.display()
            ),
        );
        let out = in_env(&env, &fused)
            .args(["train", "--config", "pool.toml", "--quiet", "--set"])
            .arg(format!("run.name={run}"))
            .env("TIDEMARK_KERNEL_CACHE", env.path("kernels"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("Fastest result"))
            .count()
    };
    let first = tuned("first");
    assert!(first > 0, "the first run tuned nothing");
    assert!(
        std::fs::read_dir(env.path("kernels")).unwrap().count() > 0,
        "nothing kept in the kernel cache"
    );
    assert_eq!(
        tuned("second"),
        0,
        "the second run tuned again ({first} the first time)"
    );
}

#[test]
fn limit_trips_on_pool_figures() {
    if !adapter_or_skip("limit_trips_on_pool_figures") {
        return;
    }
    let env = Env::new();
    env.write("pool.toml", POOL);
    let (_, growth) = pool_run(&env, "growth", &[]);
    let (start, epoch) = (event(&growth, "run_start"), event(&growth, "epoch"));
    let limit = ((num(start, "bytes_reserved").max(num(start, "bytes_in_use") * 4.0)
        + num(epoch, "bytes_reserved"))
        / 2.0) as u64;
    let (run, snaps) = pool_run(
        &env,
        "limited",
        &["--set", &format!("memory.limit={limit}")],
    );
    run.fails_with_detail(
        3,
        &["memory limit", "reserved in the device pools", "of epoch 1"],
        &["by category: "],
    );
    assert!(snaps.iter().any(|s| s["action"] == "limit"));
}

#[test]
fn a_step_reads_the_pools_after_each_pass_and_its_update_only() {
    if !adapter_or_skip("a_step_reads_the_pools_after_each_pass_and_its_update_only") {
        return;
    }
    let env = Env::new();
    env.write("pool.toml", POOL);
    // A pool reading waits for the device's thread. A step reads after each backward pass
    // (the limit's check, and the peak of a running gradient sum beside a new set), before
    // its update and after it; opening its window reads nothing. Progress reads once more,
    // about once a second: less than once a step here.
    for (accumulation, reads) in [(1, 3.0), (2, 4.0)] {
        let name = format!("accumulation-{accumulation}");
        let set = format!("train.accumulation_steps={accumulation}");
        let (run, snaps) = pool_run(&env, &name, &["--set", &set]);
        assert_eq!(run.code(), 0, "{}", run.stderr());
        let pace = &event(&snaps, "epoch")["pace"];
        let per_step = num(pace, "memory_reads_per_step");
        assert!((reads..reads + 1.0).contains(&per_step), "{name}: {pace}");
    }
}

#[test]
fn a_step_waits_for_the_device_only_where_a_loss_is_asked_for_each_step() {
    if !adapter_or_skip("a_step_waits_for_the_device_only_where_a_loss_is_asked_for_each_step") {
        return;
    }
    let env = Env::new();
    env.write("pool.toml", POOL);
    let runs = [("quiet", None), ("logged", Some("run.log_every_steps=1"))];
    for (name, set) in runs {
        // 26 steps an epoch, a fraction of a second each on lavapipe.
        let mut extra = vec!["--set", "train.batch_size=32"];
        extra.extend(set.map(|set| ["--set", set]).into_iter().flatten());
        let (run, snaps) = pool_run(&env, name, &extra);
        assert_eq!(run.code(), 0, "{}", run.stderr());
        let pace = &event(&snaps, "epoch")["pace"];
        let syncs = num(pace, "syncs_per_step");
        match set {
            // The loss is read about once a second and at the epoch's end.
            None => assert!(syncs < 0.5, "{name}: {pace}"),
            // Each step's loss is read, and each logged step's progress with it.
            Some(_) => assert!(syncs >= 1.0, "{name}: {pace}"),
        }
    }
}

#[test]
fn between_runs_returns_the_pools_to_baseline_and_never_keeps_them() {
    if !adapter_or_skip("between_runs_returns_the_pools_to_baseline_and_never_keeps_them") {
        return;
    }
    let env = Env::new();
    env.write("pool.toml", POOL);
    let rows = |clear: &str| {
        let run = env.run(&[
            "sweep",
            "--config",
            "pool.toml",
            "--runs",
            "2",
            "--out",
            clear,
            "--set",
            &format!("memory.clear={clear}"),
        ]);
        assert_eq!(run.code(), 0, "{}", run.stderr());
        sweep_runs(&env.path(clear).join("pool-sweep"))
    };
    let cleared = rows("between_runs");
    // Device memory goes back exactly, from run 1 on: the warm-up has made the one-time
    // state, and wgpu's staging buffers (host memory) are not counted.
    for r in &cleared {
        assert!(r["retained_bytes_in_use"].as_i64().unwrap() <= 0, "{r}");
        assert!(r["retained_bytes_reserved"].as_i64().unwrap() <= 0, "{r}");
    }
    let kept = rows("never");
    let peak_reserved = num(&kept[1], "reserved_at_end");
    assert!(
        peak_reserved > num(&cleared[1], "reserved_at_end") + (4 << 20) as f64,
        "never keeps the pages: {} vs {}",
        peak_reserved,
        num(&cleared[1], "reserved_at_end")
    );
}

/// `on_limit = "fit"` reads a probe as the limit does on pools: by the pages it took.
#[test]
fn fit_sizes_the_micro_batch_by_the_pool_pages_a_probe_takes() {
    if !adapter_or_skip("fit_sizes_the_micro_batch_by_the_pool_pages_a_probe_takes") {
        return;
    }
    let env = Env::new();
    env.write(
        "pool.toml",
        &POOL
            .replace("hidden = [256, 256]", "hidden = [256, 256, 256, 256]")
            .replace("samples = 1024", "samples = 4096")
            .replace("batch_size = 128", "batch_size = 2048"),
    );
    let (run, _) = pool_run(&env, "growth", &[]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let reserved = num(&env.summary("runs/growth"), "peak_bytes_reserved") as u64;
    // The growth run's own pages: with the margin, the full micro-batch no longer fits.
    let limit = format!("memory.limit={reserved}");
    let (run, snaps) = pool_run(
        &env,
        "fit",
        &["--set", &limit, "--set", "memory.on_limit=\"fit\""],
    );
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let actions: Vec<&str> = snaps
        .iter()
        .filter_map(|s| s["action"].as_str())
        .filter(|a| !["cleanup", "probe"].contains(a))
        .collect();
    assert_eq!(actions, ["fit"], "{snaps:?}");
    // Each probe's pool pages within the limit, from a micro-batch of one up.
    let probes: Vec<&Value> = snaps.iter().filter(|s| s["action"] == "probe").collect();
    assert_eq!(probes[0]["micro_batch"], 1, "{probes:?}");
    for p in &probes {
        let pages = num(p, "bytes_reserved").max(num(p, "peak_bytes_in_use"));
        assert!(pages as u64 <= reserved, "{p}");
    }
    let summary = env.summary("runs/fit");
    assert!(summary["micro_batch"].as_u64().unwrap() < 2048, "{summary}");
    assert!(
        num(&summary, "peak_bytes_reserved") as u64 <= reserved,
        "{summary}"
    );
}

/// The pool config searched over two learning rates, two trials at once under a 4 GiB budget
/// (wgpu reports no capacity to default one from).
fn pool_search() -> String {
    format!(
        "{POOL}\n[sweep]\nparallel = 2\nbudget = \"4GiB\"\n[sweep.vary]\ntrain.lr = [0.001, 0.002]\n"
    )
}

/// Two trials at once on real CubeCL pools: each child's limit is its lease, read on the
/// pools, and the leases together stay under the budget.
#[test]
fn two_trials_run_at_once_each_under_its_lease_on_pools() {
    if !adapter_or_skip("two_trials_run_at_once_each_under_its_lease_on_pools") {
        return;
    }
    let env = Env::new();
    let search = pool_search();
    env.write("pool.toml", &search);
    let run = env.run(&["sweep", "--config", "pool.toml"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let text = std::fs::read_to_string(env.path("runs/pool-sweep/sweep.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["budget_bytes"], 4u64 << 30);
    let trials = json["trials"].as_array().unwrap();
    let leases: f64 = trials.iter().map(|t| num(t, "lease_bytes")).sum();
    assert!(leases <= (4u64 << 30) as f64, "{leases}");
    let (a, b) = (&trials[0], &trials[1]);
    assert!(
        num(a, "started_s") < num(b, "ended_s") && num(b, "started_s") < num(a, "ended_s"),
        "the two ran at once: {a} {b}"
    );
    for t in trials {
        assert_eq!(t["status"], "completed", "{t}");
        let name = t["name"].as_str().unwrap();
        let summary = env.summary(&format!("runs/pool-sweep/{name}"));
        assert_eq!(summary["memory_source"], "cubecl-pool", "{summary}");
        assert_eq!(summary["limit_bytes"], t["lease_bytes"], "{summary}");
        assert!(
            num(&summary, "peak_bytes_reserved") <= num(t, "lease_bytes"),
            "{t}"
        );
    }
    // Without a size, a device that does not report its capacity (wgpu's WGSL build, even on
    // an H200: docs/gpu-results.md) has no budget to default to, and the error says why.
    env.write("pool.toml", &search.replace("budget = \"4GiB\"\n", ""));
    env.run(&["sweep", "--config", "pool.toml"]).fails_with(
        2,
        &[
            "sweep.budget",
            "the device does not report its memory",
            "only in Burn's `vulkan` build",
        ],
    );
}

/// On real CubeCL pools too, the children of a search killed with SIGKILL stop with it within
/// 2 s; their device memory goes with their processes (on an H200, `nvidia-smi` listed none
/// of them after: `scripts/gpu-check.sh`'s `orphans` step, docs/gpu-results.md).
#[test]
fn the_children_of_a_killed_search_on_pools_stop_with_it() {
    if !adapter_or_skip("the_children_of_a_killed_search_on_pools_stop_with_it") {
        return;
    }
    let env = Env::new();
    let search = pool_search();
    env.write("pool.toml", &search);
    super::parallel::children_stop_with_the_search(
        &env,
        "pool.toml",
        "runs/pool-sweep",
        "train.epochs=500",
    );
}

/// A parameter-heavy MLP, 64 -> 512 -> 512 -> 10 (a gradient set of 1.2 MiB), trained by SGD,
/// whose update holds no state: a step's highest figure is in its backward passes.
const WIDE: &str = r#"
[run]
name = "wide"
seed = 1

[device]
backend = "wgpu"

[model]
hidden = [512, 512]

[data]
kind = "synthetic"
samples = 1024
features = 64
classes = 10

[train]
epochs = 2
batch_size = 256
accumulation_steps = 4
optimizer = "sgd"
lr = 0.01
"#;

/// The figures of each epoch snapshot: (loss, peak in use).
fn epochs_of(snaps: &[Value]) -> Vec<(f64, f64)> {
    snaps
        .iter()
        .filter(|s| s["event"] == "epoch")
        .map(|s| (num(s, "loss"), num(s, "peak_bytes_in_use")))
        .collect()
}

#[test]
fn gradient_offload_keeps_the_losses_and_one_gradient_set_on_the_device() {
    if !adapter_or_skip("gradient_offload_keeps_the_losses_and_one_gradient_set_on_the_device") {
        return;
    }
    let env = Env::new();
    env.write("wide.toml", WIDE);
    let run = |name: &str, extra: &[&str]| {
        let set = format!("run.name={name}");
        let mut args = vec!["train", "--config", "wide.toml", "--quiet", "--set", &set];
        args.extend_from_slice(extra);
        let run = env.run(&args);
        assert_eq!(run.code(), 0, "{name}: {}", run.stderr());
        epochs_of(&env.snapshots(&format!("runs/{name}")))
    };
    let device = run("device", &[]);
    let host = run("host", &["--set", "train.offload.gradients=host"]);
    let large = run(
        "large",
        &[
            "--set",
            "train.batch_size=1024",
            "--set",
            "train.accumulation_steps=1",
        ],
    );
    let params = (64 * 512 + 512) + (512 * 512 + 512) + (512 * 10 + 10);
    let set = (params * 4) as f64;
    let peak = |epochs: &[(f64, f64)]| epochs.iter().map(|e| e.1).fold(0.0, f64::max);
    assert_eq!((device.len(), host.len(), large.len()), (2, 2, 2));
    for ((d, h), l) in device.iter().zip(&host).zip(&large) {
        assert!((d.0 - h.0).abs() < 1e-5, "losses {} and {}", d.0, h.0);
        assert!(
            (d.0 - l.0).abs() < 1e-4,
            "the large batch's loss {} against {}",
            l.0,
            d.0
        );
    }
    // Summed on the host, the device never holds the running sum beside a new set: its peak
    // is the large batch's (to the pools' bookkeeping), a set below the device sum's.
    let (device, host, large) = (peak(&device), peak(&host), peak(&large));
    assert!(
        device - host >= 0.9 * set,
        "offload saved {} of a gradient set of {set}",
        device - host
    );
    assert!(
        host <= large * 1.001,
        "4 x 256 offloaded peaked at {host}, 1024 at once at {large}"
    );
}
