//! `[train.schedule] kind = "plateau"` (issue 42): the rate drops where the monitored figure
//! stops improving (Keras's `ReduceLROnPlateau`), checked against the run's own snapshots;
//! with a warmup before it; and a run killed after some drops resumes to the same weights.

use super::resume::max_difference;
use super::{Env, SMALL};

/// 12 epochs of 15 steps at a rate high enough to plateau, `keys` in `[train.schedule]`.
fn config(env: &Env, keys: &str) {
    let text = SMALL
        .replace("samples = 1200", "samples = 600")
        .replace("epochs = 3", "epochs = 12")
        .replace("lr = 0.003", "lr = 0.05")
        .replace("hidden = [32]", "hidden = [128]");
    let schedule = format!("[train.schedule]\nkind = \"plateau\"\nfactor = 0.5\n{keys}\n");
    env.write("plateau.toml", &format!("{text}\n{schedule}"));
}

/// Each epoch's (step, val_loss, lr), from the run's snapshots.
fn epochs(env: &Env, run: &str) -> Vec<(u64, f64, f64)> {
    (env.snapshots(run).iter())
        .filter(|s| s["event"] == "epoch")
        .map(|s| {
            let f = |k: &str| s[k].as_f64().unwrap();
            (s["step"].as_u64().unwrap(), f("val_loss"), f("lr"))
        })
        .collect()
}

/// The rate at each epoch's last step as Keras's rule gives it from the epochs' val_loss
/// (patience `patience`, min_delta 1e-4, factor 0.5, no cooldown), the rate before the drops
/// being `base(step)`.
fn expected(epochs: &[(u64, f64, f64)], patience: usize, base: impl Fn(u64) -> f64) -> Vec<f64> {
    let (mut best, mut wait, mut scale) = (f64::INFINITY, 0, 1.0);
    let mut rates = Vec::new();
    for &(step, val_loss, _) in epochs {
        rates.push(base(step) * scale);
        if val_loss < best - 1e-4 {
            (best, wait) = (val_loss, 0);
        } else {
            wait += 1;
            if wait >= patience {
                (scale, wait) = (scale * 0.5, 0);
            }
        }
    }
    rates
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= 1e-12 * y.abs())
}

#[test]
fn the_rate_drops_at_the_plateau_and_a_killed_run_resumes_to_the_bit() {
    let env = Env::new();
    config(&env, "patience = 1");
    let run = env.run(&[
        "train",
        "--config",
        "plateau.toml",
        "--set",
        "run.name=whole",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let whole = epochs(&env, "runs/whole");
    let rates: Vec<f64> = whole.iter().map(|e| e.2).collect();
    assert!(close(&rates, &expected(&whole, 1, |_| 0.05)), "{whole:?}");
    let drops = run
        .stderr()
        .matches("plateau: val_loss has not improved for 1 epoch(s)")
        .count();
    assert!(
        drops >= 2 && rates.last() < rates.first(),
        "{drops} drops: {rates:?}"
    );
    // Killed at step 100 (in epoch 7), after some drops; resumed from epoch 6.
    let killed = [
        "train",
        "--config",
        "plateau.toml",
        "--set",
        "run.name=killed",
    ];
    env.killed_at(&killed, "step:100");
    assert!(
        whole[..6].iter().any(|e| e.2 < 0.05),
        "a drop before the kill: {whole:?}"
    );
    let resumed = env.run(&["train", "--resume", "runs/killed"]);
    assert_eq!(resumed.code(), 0, "{}", resumed.stderr());
    let diff = max_difference(&env.path("runs/whole"), &env.path("runs/killed"));
    assert_eq!(diff, 0.0, "the final weights differ by {diff:e}");
    assert_eq!(epochs(&env, "runs/killed"), whole);
}

#[test]
fn a_warmup_leads_into_the_plateau() {
    let env = Env::new();
    config(&env, "patience = 2\nwarmup_steps = 20");
    let run = env.run(&["train", "--config", "plateau.toml"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let epochs = epochs(&env, "runs/small");
    // Epoch 1 ends at step 15 of the warmup's 20.
    assert!(close(&[epochs[0].2], &[0.05 * 15.0 / 20.0]), "{epochs:?}");
    let warmup = |step: u64| 0.05 * (step.min(20) as f64) / 20.0;
    let rates: Vec<f64> = epochs.iter().map(|e| e.2).collect();
    assert!(close(&rates, &expected(&epochs, 2, warmup)), "{epochs:?}");
}

#[test]
fn the_keys_refuse_what_they_cannot_mean() {
    let env = Env::new();
    config(&env, "");
    let train = |set: &str| env.run(&["train", "--config", "plateau.toml", "--set", set]);
    train("train.schedule.factor=1.5").fails_with(2, &["train.schedule.factor must be in (0, 1)"]);
    train("train.schedule.monitor=\"val_f1\"").fails_with(
        2,
        &["train.schedule.monitor = \"val_f1\" is not a figure this task reports"],
    );
    let cosine = env.run(&[
        "train",
        "--config",
        "plateau.toml",
        "--set",
        "train.schedule.kind=\"cosine\"",
        "--set",
        "train.schedule.factor=0.5",
    ]);
    cosine.fails_with(2, &["train.schedule.factor", "plateau"]);
}
