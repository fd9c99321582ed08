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
fn on_flex_a_step_never_waits_for_the_device_even_where_its_loss_is_read_each_step() {
    let env = Env::small();
    for (name, extra) in [("quiet", None), ("logged", Some("run.log_every_steps=1"))] {
        let mut args = vec!["--quiet"];
        args.extend(extra.map(|set| ["--set", set]).into_iter().flatten());
        let run = env.train_small(name, &args);
        assert_eq!(run.code(), 0, "{}", run.stderr());
    }
    // flex runs each operation when it is called: a step's loss is read as it is made and
    // summed on the host, so reading it each step waits for nothing. Where a read waits (on
    // pools), `wgpu::a_step_waits_for_the_device_only_where_a_loss_is_asked_for_each_step`.
    for name in ["quiet", "logged"] {
        for pace in paces(&env, name) {
            assert!(num(&pace, "first_step_ms") > 0.0, "{pace}");
            assert!(num(&pace, "median_step_ms") > 0.0, "{pace}");
            assert_eq!(num(&pace, "syncs_per_step"), 0.0, "{name}: {pace}");
            // flex's figures are tidemark's own counters: no pool is read.
            assert_eq!(num(&pace, "memory_reads_per_step"), 0.0, "{pace}");
        }
    }
}
