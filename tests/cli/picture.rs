//! `memory.svg` and the step trace it draws: every epoch snapshot carries memory per optimizer
//! step in a bounded number of points that keep the epoch's peak, and the picture stacks the
//! breakdown over each epoch, with the losses and the learning rate under it.

use serde_json::Value;

use super::{num, Env};

/// The epoch snapshots of a run.
fn epochs(env: &Env, run: &str) -> Vec<Value> {
    let all = env.snapshots(run);
    all.into_iter().filter(|s| s["event"] == "epoch").collect()
}

#[test]
fn every_epoch_traces_its_steps_in_bounded_points_that_keep_its_peak() {
    let env = Env::small();
    // 120 steps an epoch: more than the 64 points an epoch may keep.
    let run = env.train_small(
        "trace",
        &["--set", "train.batch_size=8", "--set", "train.epochs=2"],
    );
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let mut steps_before = 0;
    for epoch in epochs(&env, "runs/trace") {
        let points = epoch["steps"]
            .as_array()
            .unwrap_or_else(|| panic!("{epoch}"));
        assert!((32..=64).contains(&points.len()), "{} points", points.len());
        let steps: Vec<u64> = points.iter().map(|p| p["step"].as_u64().unwrap()).collect();
        assert!(steps.windows(2).all(|w| w[0] < w[1]), "{steps:?}");
        assert!(steps[0] > steps_before);
        let last = epoch["step"].as_u64().unwrap();
        assert_eq!(
            *steps.last().unwrap(),
            last,
            "the last point is the epoch's last step"
        );
        steps_before = last;
        // The epoch's peak fell in a step (not in validation): the trace holds it.
        let highest = points.iter().map(|p| num(p, "peak")).fold(0.0, f64::max);
        let peak = num(&epoch, "peak_bytes_in_use");
        assert_ne!(epoch["breakdown"]["phase"], "outside", "{epoch}");
        assert_eq!(highest, peak, "{epoch}");
        for p in points {
            assert!(num(p, "in_use") <= num(p, "peak"), "{p}");
        }
    }
}

#[test]
fn the_picture_stacks_the_breakdown_and_draws_loss_and_lr_under_memory() {
    let env = Env::small();
    let run = env.train_small("pic", &["--quiet"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let svg = std::fs::read_to_string(env.path("runs/pic/memory.svg")).unwrap();
    for text in [
        "pic: memory per step and epoch (host)",
        "peak: weights",
        "peak: gradients",
        "peak: optimizer",
        "peak: activations",
        "peak in use per step",
        "\nloss\n",
        "val_loss (monitored)",
        "\nlr\n",
    ] {
        assert!(svg.contains(text), "{text:?} missing from memory.svg");
    }
    // Six categories stacked over each of the three epochs.
    let bars = svg.matches("<rect").count();
    assert!(bars >= 3 * 6, "{bars} rectangles");
}
