//! `memory.on_limit = "fit"`: the micro-batch is chosen before the first step by probing, the
//! run then has no breach and no retry, and its updates are the unfitted large batch's.

use serde_json::Value;

use super::resume::max_difference;
use tidemark::memory::format_bytes;

use super::{num, Env};

/// Activations dominate: four layers of 128 over micro-batches of 2048.
pub(super) const WIDE: &str = r#"
[run]
name = "wide"
seed = 3

[model]
hidden = [128, 128, 128, 128]

[data]
kind = "synthetic"
samples = 5120
features = 32
classes = 4
num_workers = 0

[train]
epochs = 1
batch_size = 2048
"#;

fn actions(env: &Env, run: &str) -> Vec<Value> {
    env.snapshots(run)
        .into_iter()
        .filter(|s| s["event"] == "memory_action")
        .collect()
}

#[test]
fn fit_picks_a_micro_batch_that_fits_and_trains_the_large_batchs_update() {
    let env = Env::new();
    env.write("wide.toml", WIDE);
    let growth = env.run(&[
        "train",
        "--config",
        "wide.toml",
        "--set",
        "run.name=\"growth\"",
    ]);
    assert_eq!(growth.code(), 0, "{}", growth.stderr());
    let summary = env.summary("runs/growth");
    let peak = num(&summary, "peak_bytes_in_use");
    let rest = env
        .snapshots("runs/growth")
        .iter()
        .find(|s| s["event"] == "epoch")
        .map(|s| num(s, "bytes_in_use"))
        .unwrap();
    // A limit the full micro-batch breaks: two thirds of the way from rest to the peak.
    let limit = (rest + (peak - rest) * 2.0 / 3.0) as u64;
    let set_limit = format!("memory.limit={limit}");
    let fit = env.run(&[
        "train",
        "--config",
        "wide.toml",
        "--set",
        "run.name=\"fit\"",
        "--set",
        &set_limit,
        "--set",
        "memory.on_limit=\"fit\"",
    ]);
    assert_eq!(fit.code(), 0, "{}", fit.stderr());
    let actions = actions(&env, "runs/fit");
    let kinds: Vec<&str> = actions
        .iter()
        .filter_map(|a| a["action"].as_str())
        .filter(|a| !["cleanup", "probe"].contains(a))
        .collect();
    assert_eq!(
        kinds,
        ["fit"],
        "one fit, no breach and no retry: {actions:?}"
    );
    let fitted_action = actions.iter().find(|a| a["action"] == "fit").unwrap();
    let detail = fitted_action["detail"].as_str().unwrap();
    assert!(detail.starts_with("micro-batch 2048 -> "), "{detail}");
    // Every probe stayed within the limit, from a micro-batch of one up; each is in the
    // snapshots at its own micro-batch, and the run's peak counts them.
    let probes: Vec<&Value> = actions.iter().filter(|a| a["action"] == "probe").collect();
    let sizes: Vec<u64> = probes
        .iter()
        .map(|p| p["micro_batch"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes.first(), Some(&1), "{sizes:?}");
    // Each probe at most four times the largest that fit before it.
    for (i, size) in sizes.iter().enumerate().skip(1) {
        let fitted = probes[..i]
            .iter()
            .filter(|p| {
                p["detail"]
                    .as_str()
                    .unwrap()
                    .contains(", within fit's target")
            })
            .map(|p| p["micro_batch"].as_u64().unwrap())
            .max()
            .unwrap();
        assert!(*size <= 4 * fitted, "{sizes:?}");
    }
    let probe_peak = probes
        .iter()
        .map(|p| num(p, "peak_bytes_in_use"))
        .fold(0.0, f64::max);
    assert!(
        probe_peak <= limit as f64,
        "a probe peaked at {probe_peak} over {limit}"
    );
    let fitted = env.summary("runs/fit");
    let micro = fitted["micro_batch"].as_u64().unwrap();
    assert!(micro < 2048, "{fitted}");
    assert_eq!(
        micro * fitted["accumulation_steps"].as_u64().unwrap(),
        2048,
        "the effective batch is kept"
    );
    assert!(num(&fitted, "peak_bytes_in_use") <= limit as f64);
    assert!(
        num(&fitted, "peak_bytes_in_use") >= probe_peak,
        "the probes count"
    );
    // The probes leave no weights changed and nothing behind: the fitted run's update is the
    // large batch's.
    let diff = max_difference(&env.path("runs/growth"), &env.path("runs/fit"));
    assert!(diff < 1e-5, "weights differ by {diff}");
}

/// WIDE's parameters: 32 -> 128 -> 128 -> 128 -> 128 -> 4, weights and biases.
const WIDE_PARAMS: u64 = (32 * 128 + 128) + 3 * (128 * 128 + 128) + (128 * 4 + 4);

#[test]
fn fit_fails_cleanly_when_no_micro_batch_fits_and_needs_a_limit() {
    let env = Env::new();
    env.write("wide.toml", WIDE);
    // What this machine holds at the start (Burn's state, the data, the model): measured here,
    // since it differs between CPUs and with the number of rayon threads.
    let growth = env.run(&["train", "--config", "wide.toml", "--quiet"]);
    assert_eq!(growth.code(), 0, "{}", growth.stderr());
    let start = env
        .snapshots("runs/wide")
        .iter()
        .find(|s| s["event"] == "run_start")
        .map(|s| num(s, "bytes_in_use"))
        .unwrap();
    // What the run holds at rest: the start, and the f32 gradients and Adam's two moments
    // that the first step adds. Every step holds at least that at its peak, so a limit 5%
    // above it lets the run start, and fit's 10% margin leaves no step room: not even a
    // micro-batch of one fits, and no larger one is probed.
    let rest = start + (WIDE_PARAMS * 4 * 3) as f64;
    let limit = (rest * 1.05) as u64;
    let run = env.run(&[
        "train",
        "--config",
        "wide.toml",
        "--set",
        &format!("memory.limit={limit}"),
        "--set",
        "memory.on_limit=\"fit\"",
        "--set",
        "run.name=\"fit\"",
        "--quiet",
    ]);
    let target = format_bytes((limit as f64 * 0.9) as u64);
    run.fails_with_detail(
        3,
        &[
            &format!(
                "memory limit {}: fit's target {target} (the limit less 10%",
                format_bytes(limit)
            ),
            "with the optimizer's state to come in a probe before training (micro-batch 1, \
             accumulation_steps 2048)",
        ],
        &["the micro-batch is already 1"],
    );
    let probes: Vec<u64> = actions(&env, "runs/fit")
        .iter()
        .filter(|a| a["action"] == "probe")
        .map(|a| a["micro_batch"].as_u64().unwrap())
        .collect();
    assert_eq!(probes, [1], "given up after the smallest, and only then");
    assert!(
        env.snapshots("runs/fit")
            .iter()
            .all(|s| s["event"] != "epoch"),
        "no step was trained"
    );
    let run = env.run(&[
        "train",
        "--config",
        "wide.toml",
        "--set",
        "memory.on_limit=\"fit\"",
    ]);
    run.fails_with(
        2,
        &["memory.on_limit = \"fit\" needs memory.limit to be set"],
    );
}

/// bf16 over a wide layer: a step's figure grows by a few KiB a sample beside 50 MiB of
/// weights, their bf16 copy and Adam's moments.
const WIDE_BF16: &str = r#"
[run]
name = "bf"
seed = 1
[model]
hidden = [2048]
[data]
kind = "synthetic"
samples = 256
features = 1024
classes = 4
num_workers = 0
[train]
epochs = 1
batch_size = 8
precision = "bf16"
[memory]
on_limit = "fit"
"#;

/// Adam's two f32 moments of WIDE_BF16's 1024 -> 2048 -> 4 layers: the state to come that a
/// probe's figure adds.
const WIDE_BF16_STATE: u64 = 2 * 4 * ((1024 * 2048 + 2048) + (2048 * 4 + 4));

/// Where only a micro-batch of one fits, fit trains there: the probes start from it, and
/// none gives up before it was tried.
#[test]
fn fit_trains_at_a_micro_batch_of_one_where_only_it_fits() {
    let env = Env::new();
    env.write("bf.toml", WIDE_BF16);
    // Every probe's figure, measured here under a limit that takes them all: five times the
    // weights, their f32 gradients and Adam's moments (each a multiple of the moments' size).
    let loose_limit = format!("memory.limit={}", 10 * WIDE_BF16_STATE);
    let loose = env.run(&[
        "train",
        "--config",
        "bf.toml",
        "--set",
        &loose_limit,
        "--set",
        "run.name=\"loose\"",
        "--quiet",
    ]);
    assert_eq!(loose.code(), 0, "{}", loose.stderr());
    let peaks: Vec<(u64, f64)> = actions(&env, "runs/loose")
        .iter()
        .filter(|a| a["action"] == "probe")
        .map(|a| {
            (
                a["micro_batch"].as_u64().unwrap(),
                num(a, "peak_bytes_in_use"),
            )
        })
        .collect();
    assert_eq!(peaks[0].0, 1, "{peaks:?}");
    let (one, four) = (
        peaks[0].1,
        peaks.iter().find(|p| p.0 == 4).expect("4 probed").1,
    );
    assert!(four > one, "{peaks:?}");
    // fit's target halfway between a step at one sample and at two, on the line to four.
    let target = one + (four - one) / 6.0 + WIDE_BF16_STATE as f64;
    let limit = (target / 0.9).ceil() as u64;
    let fit = env.run(&[
        "train",
        "--config",
        "bf.toml",
        "--set",
        &format!("memory.limit={limit}"),
        "--set",
        "run.name=\"tight\"",
        "--quiet",
    ]);
    assert_eq!(fit.code(), 0, "{}", fit.stderr());
    let summary = env.summary("runs/tight");
    assert_eq!(summary["micro_batch"], 1, "{summary}");
    assert_eq!(summary["accumulation_steps"], 8, "{summary}");
    assert!(
        num(&summary, "peak_bytes_in_use") <= limit as f64,
        "{summary}"
    );
    let probes: Vec<Value> = actions(&env, "runs/tight")
        .into_iter()
        .filter(|a| a["action"] == "probe")
        .collect();
    assert_eq!(probes[0]["micro_batch"], 1);
    assert!(probes
        .iter()
        .all(|p| num(p, "peak_bytes_in_use") <= limit as f64));
}
