//! The breakdown of each epoch's peak by category: the counted categories are the tensors' own
//! sizes, and on flex the categories add up to the peak the allocator saw.

use serde_json::Value;

use super::{num, Env};

/// The small config's MLP, 16 → 32 → 4: its parameters in f32.
const WEIGHT_BYTES: u64 = ((16 * 32 + 32) + (32 * 4 + 4)) * 4;

fn breakdowns(env: &Env, run: &str) -> Vec<Value> {
    env.snapshots(run)
        .into_iter()
        .filter(|s| s["event"] == "epoch")
        .collect()
}

#[test]
fn every_epoch_breaks_its_peak_down_by_category_and_the_categories_sum_to_it() {
    let env = Env::small();
    let run = env.train_small("plain", &[]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let epochs = breakdowns(&env, "runs/plain");
    assert_eq!(epochs.len(), 3);
    for s in &epochs {
        let b = &s["breakdown"];
        let get = |k: &str| b[k].as_u64().unwrap_or_else(|| panic!("{k} in {b}"));
        // Adam: the weights, one gradient set, two moments.
        assert_eq!(get("weights"), WEIGHT_BYTES);
        assert_eq!(get("gradients"), WEIGHT_BYTES);
        assert_eq!(get("optimizer"), 2 * WEIGHT_BYTES);
        // 1200 samples of 16 f32 features, counted by the allocator as they loaded (with each
        // sample's own small overhead).
        let data = get("data");
        assert!((1200 * 16 * 4..2 * 1200 * 16 * 4).contains(&data), "{data}");
        let total: u64 = [
            "weights",
            "gradients",
            "optimizer",
            "data",
            "activations",
            "other",
        ]
        .iter()
        .map(|k| get(k))
        .sum();
        let peak = num(s, "peak_bytes_in_use");
        assert!(
            (total as f64 - peak).abs() <= 0.02 * peak,
            "categories {total} against the peak {peak}"
        );
        assert_eq!(
            b["estimated"],
            serde_json::json!(["gradients", "activations"])
        );
    }
    // The summary keeps the highest peak's breakdown, and the report prints it.
    let summary = env.summary("runs/plain");
    assert_eq!(summary["breakdown"]["weights"], WEIGHT_BYTES);
    let report = env.run(&["report", "runs/plain"]);
    assert!(
        report.stdout().contains("by category: ") && report.stdout().contains("weights 2.6 KiB"),
        "{}",
        report.stdout()
    );
}

#[test]
fn accumulation_holds_two_gradient_sets_and_bf16_a_weight_copy() {
    let env = Env::small();
    let run = env.train_small(
        "acc",
        &[
            "--set",
            "train.accumulation_steps=2",
            "--set",
            "train.optimizer=\"sgd\"",
        ],
    );
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let b = &breakdowns(&env, "runs/acc")[0]["breakdown"];
    // The sum so far and the micro-batch's own; plain SGD keeps no state.
    assert_eq!(b["gradients"].as_u64().unwrap(), 2 * WEIGHT_BYTES);
    assert_eq!(b["optimizer"], 0);
    let run = env.train_small("bf16", &["--set", "train.precision=\"bf16\""]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let b = &breakdowns(&env, "runs/bf16")[0]["breakdown"];
    // f32 weights and their 2-byte compute copy.
    assert_eq!(
        b["weights"].as_u64().unwrap(),
        WEIGHT_BYTES + WEIGHT_BYTES / 2
    );
}
