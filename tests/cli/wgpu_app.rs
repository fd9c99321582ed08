//! An app's own kind on real CubeCL pools (wgpu on lavapipe): two of its trials at once, each
//! under its lease, from the app's binary. Built with `cargo test --features wgpu` after
//! `cargo build --features wgpu --example custom_model` (CI's wgpu step builds both).

use super::app::{search, sweep_json, trials};
use super::wgpu::adapter_or_skip;
use super::{num, Env};

#[test]
fn two_of_an_app_s_trials_run_at_once_each_under_its_lease_on_pools() {
    if !adapter_or_skip("two_of_an_app_s_trials_run_at_once_each_under_its_lease_on_pools") {
        return;
    }
    let env = Env::new();
    let config = search()
        .replace("[model]", "[device]\nbackend = \"wgpu\"\n\n[model]")
        .replace("model.width = [32, 64, 128, 256]", "model.width = [32]")
        .replace(
            "train.lr = [3e-4, 1e-3, 3e-3, 1e-2]",
            "train.lr = [1e-3, 1e-2]",
        )
        .replace("epochs = 3", "epochs = 2")
        // The WGSL runtime does not report the device's memory: the budget is given.
        .replace("parallel = 2", "parallel = 2\nbudget = \"4GiB\"");
    env.write("search.toml", &config);
    let run = env.app(&["sweep", "--config", "search.toml"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let json = sweep_json(&env, "runs/sales-search-sweep");
    assert_eq!(
        (json["parallel"].as_u64(), json["budget_bytes"].as_u64()),
        (Some(2), Some(4 << 30))
    );
    let trials = trials(&json);
    assert_eq!(trials.len(), 2);
    for t in &trials {
        // Each trial ran under its lease as its limit, and what its pools reserved stayed
        // within it.
        let name = t["name"].as_str().unwrap();
        let summary = env.summary(&format!("runs/sales-search-sweep/{name}"));
        assert_eq!(summary["memory_source"], "cubecl-pool", "{summary}");
        assert_eq!(summary["limit_bytes"], t["lease_bytes"], "{summary}");
        let reserved = num(&summary, "peak_bytes_reserved");
        assert!(
            reserved <= num(t, "lease_bytes"),
            "reserved above the lease: {t}"
        );
    }
    let overlapped = (trials.iter()).any(|a| {
        (trials.iter()).any(|b| {
            a["trial"] != b["trial"]
                && num(a, "started_s") < num(b, "ended_s")
                && num(b, "started_s") < num(a, "ended_s")
        })
    });
    assert!(overlapped, "two trials ran at once: {json}");
}
