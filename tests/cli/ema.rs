//! `[train.ema]` (issue 42): the moving average of the weights, what validation, `evaluate`
//! and `predict` use, counted in the memory breakdown, and resumed exactly.

use super::{Env, SMALL};

/// SMALL with a 64-wide layer and, unless `ema` is empty, `[train.ema]` with `ema`'s keys.
fn config(env: &Env, name: &str, ema: &str) {
    let mut text = SMALL
        .replace("hidden = [32]", "hidden = [64]")
        .replace("lr = 0.003", "lr = 0.01");
    if !ema.is_empty() {
        text += &format!("\n[train.ema]\n{ema}\n");
    }
    env.write(
        &format!("{name}.toml"),
        &text.replace("name = \"small\"", &format!("name = \"{name}\"")),
    );
}

fn train(env: &Env, name: &str) {
    let run = env.run(&["train", "--config", &format!("{name}.toml")]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
}

/// Each epoch's (loss, val_loss, breakdown weights).
fn epochs(env: &Env, name: &str) -> Vec<(f64, f64, u64)> {
    (env.snapshots(&format!("runs/{name}")).iter())
        .filter(|s| s["event"] == "epoch")
        .map(|s| {
            let weights = s["breakdown"]["weights"].as_u64().unwrap();
            (
                s["loss"].as_f64().unwrap(),
                s["val_loss"].as_f64().unwrap(),
                weights,
            )
        })
        .collect()
}

#[test]
fn validation_and_evaluate_use_the_average_and_training_is_unchanged() {
    let env = Env::new();
    config(&env, "plain", "");
    config(&env, "average", "decay = 0.9");
    config(&env, "raw", "decay = 0.9\nevaluate_with = \"raw\"");
    for name in ["plain", "average", "raw"] {
        train(&env, name);
    }
    let (plain, average, raw) = (
        epochs(&env, "plain"),
        epochs(&env, "average"),
        epochs(&env, "raw"),
    );
    // The average changes nothing the optimizer does: the same training losses, bit for bit.
    let losses = |e: &[(f64, f64, u64)]| e.iter().map(|x| x.0).collect::<Vec<_>>();
    assert_eq!(losses(&average), losses(&plain));
    assert_eq!(losses(&raw), losses(&plain));
    // Validated on the raw weights, the plain run's figures; on the average, others.
    let val = |e: &[(f64, f64, u64)]| e.iter().map(|x| x.1).collect::<Vec<_>>();
    assert_eq!(val(&raw), val(&plain));
    assert_ne!(val(&average), val(&plain));
    // The average is counted with the weights: 16 * 64 + 64 + 64 * 4 + 4 parameters, f32.
    let params = (16 * 64 + 64 + 64 * 4 + 4) * 4;
    for (with, without) in average.iter().zip(&plain) {
        assert_eq!(with.2, without.2 + params);
    }
    // evaluate uses what validation used: the average's val_loss, from the checkpoint's ema.bpk.
    let last = average.last().unwrap().1;
    let eval = env.run(&["evaluate", "runs/average"]);
    assert!(
        eval.stdout().contains(&format!("loss {last:.4}")),
        "{}",
        eval.stdout()
    );
    assert!(env
        .path("runs/average/checkpoints/epoch-3/ema.bpk")
        .is_file());
    let eval_raw = env.run(&["evaluate", "runs/raw"]);
    let raw_last = raw.last().unwrap().1;
    assert!(
        eval_raw.stdout().contains(&format!("loss {raw_last:.4}")),
        "{}",
        eval_raw.stdout()
    );
}

#[test]
fn a_killed_run_resumes_to_the_same_average() {
    let env = Env::new();
    config(&env, "whole", "decay = 0.9\nstart_step = 10");
    config(&env, "killed", "decay = 0.9\nstart_step = 10");
    train(&env, "whole");
    // Killed at step 40, in epoch 2 (30 steps an epoch): resumed from epoch 1.
    env.killed_at(&["train", "--config", "killed.toml"], "step:40");
    let resumed = env.run(&["train", "--resume", "runs/killed"]);
    assert_eq!(resumed.code(), 0, "{}", resumed.stderr());
    // Validated on the average: the same val_loss every epoch, the resumed ones included,
    // only where the average went on from the checkpoint's ema.bpk exactly.
    assert_eq!(epochs(&env, "killed"), epochs(&env, "whole"));
    let said = |run: &str| env.run(&["evaluate", &format!("runs/{run}")]).stdout();
    let figures = |text: String| {
        let line = text.lines().next().unwrap_or_default().to_string();
        line.split_once("samples: ").map(|(_, f)| f.to_string())
    };
    assert_eq!(figures(said("killed")), figures(said("whole")));
}

#[test]
fn the_keys_refuse_what_they_cannot_mean() {
    let env = Env::new();
    config(&env, "bad", "decay = 0.9");
    let train = |set: &str| env.run(&["train", "--config", "bad.toml", "--set", set]);
    train("train.ema.decay=1.0").fails_with(2, &["train.ema.decay must be in (0, 1)"]);
    train("train.ema.device=\"host\"").fails_with(
        2,
        &[
            "train.ema.device",
            "has nothing to move on device.backend = \"flex\"",
        ],
    );
    train("train.ema.evaluate_with=\"best\"").fails_with(2, &["train.ema.evaluate_with"]);
}
