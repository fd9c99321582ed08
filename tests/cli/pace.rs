//! Epoch lines' `pace`: step times and waits for the device, as `scripts/gpu-peers.sh` reads
//! them.

use super::*;

fn paces(env: &Env, name: &str) -> Vec<Value> {
    let snaps = env.snapshots(&format!("runs/{name}"));
    let epochs: Vec<Value> = (snaps.iter())
        .filter(|s| s["event"] == "epoch")
        .map(|s| s["pace"].clone())
        .collect();
    assert_eq!(epochs.len(), 3, "{snaps:?}");
    epochs
}

#[test]
fn a_step_waits_for_the_device_only_where_a_loss_is_asked_for_each_step() {
    let env = Env::small();
    for (name, extra) in [("quiet", None), ("logged", Some("run.log_every_steps=1"))] {
        let mut args = vec!["--quiet"];
        args.extend(extra.map(|set| ["--set", set]).into_iter().flatten());
        let run = env.train_small(name, &args);
        assert_eq!(run.code(), 0, "{}", run.stderr());
    }
    for pace in paces(&env, "quiet") {
        assert!(num(&pace, "first_step_ms") > 0.0, "{pace}");
        assert!(num(&pace, "median_step_ms") > 0.0, "{pace}");
        // 30 steps an epoch: the loss is read about once a second and at the epoch's end.
        assert!(num(&pace, "syncs_per_step") < 0.5, "{pace}");
        // flex's figures are tidemark's own counters: no pool is read.
        assert_eq!(num(&pace, "memory_reads_per_step"), 0.0, "{pace}");
    }
    for pace in paces(&env, "logged") {
        // Each step's loss is read, and each logged step's progress with it.
        assert!(num(&pace, "syncs_per_step") >= 1.0, "{pace}");
    }
}
