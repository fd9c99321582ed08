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
        .filter(|a| *a != "cleanup")
        .collect();
    assert_eq!(
        kinds,
        ["fit"],
        "one fit, no breach and no retry: {actions:?}"
    );
    let detail = actions[0]["detail"].as_str().unwrap();
    assert!(detail.starts_with("micro-batch 2048 -> "), "{detail}");
    let fitted = env.summary("runs/fit");
    let micro = fitted["micro_batch"].as_u64().unwrap();
    assert!(micro < 2048, "{fitted}");
    assert_eq!(
        micro * fitted["accumulation_steps"].as_u64().unwrap(),
        2048,
        "the effective batch is kept"
    );
    assert!(num(&fitted, "peak_bytes_in_use") <= limit as f64);
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
    // above it lets the run start, and fit's 10% margin leaves no step room: the probes stop
    // once the halvings' savings cannot close the gap.
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
    run.fails_with(
        3,
        &[
            &format!("memory limit {} exceeded:", format_bytes(limit)),
            "with the optimizer's state to come in a probe before training",
            "so no micro-batch fits",
        ],
    );
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
