//! `[checkpoint] keep_best = 3` (issue 42): the three best epochs' checkpoints by the monitored
//! figure are kept beside the latest, ranked in `checkpoints/ranking.json` (`best-1` ...), and
//! a kill while a checkpoint is saved leaves every listed one loadable.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{Env, SMALL};

/// Ten epochs at a rate high enough that the best epochs are not the last ones.
fn config(env: &Env) {
    let text = SMALL
        .replace("samples = 1200", "samples = 600")
        .replace("epochs = 3", "epochs = 10")
        .replace("lr = 0.003", "lr = 0.05")
        .replace("hidden = [32]", "hidden = [128]");
    env.write(
        "keep.toml",
        &format!("{text}\n[checkpoint]\nkeep_best = 3\n"),
    );
}

/// The checkpoint directories on disk.
fn on_disk(env: &Env) -> BTreeSet<String> {
    (std::fs::read_dir(env.path("runs/small/checkpoints")).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("epoch-") || n.starts_with("step-"))
        .collect()
}

/// `checkpoints/ranking.json`'s names, best first.
fn ranking(env: &Env) -> Vec<String> {
    let text = std::fs::read_to_string(env.path("runs/small/checkpoints/ranking.json")).unwrap();
    let ranked: Vec<Value> = serde_json::from_str(&text).unwrap();
    (ranked.iter())
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect()
}

/// The run's epochs, best first by val_loss (a tie to the earlier epoch).
fn best_epochs(env: &Env) -> Vec<(String, f64)> {
    let mut epochs: Vec<(String, f64)> = (env.snapshots("runs/small").iter())
        .filter(|s| s["event"] == "epoch")
        .map(|s| {
            (
                format!("epoch-{}", s["epoch"]),
                s["val_loss"].as_f64().unwrap(),
            )
        })
        .collect();
    epochs.sort_by(|a, b| a.1.total_cmp(&b.1));
    epochs
}

#[test]
fn ten_epochs_keep_exactly_the_three_best_and_the_latest() {
    let env = Env::new();
    config(&env);
    let run = env.run(&["train", "--config", "keep.toml"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let best: Vec<(String, f64)> = best_epochs(&env).into_iter().take(3).collect();
    let names: Vec<String> = best.iter().map(|b| b.0.clone()).collect();
    assert!(
        !names.contains(&"epoch-10".to_string()),
        "{best:?}: the test needs another run"
    );
    assert_eq!(ranking(&env), names);
    let mut expected: BTreeSet<String> = names.iter().cloned().collect();
    expected.insert("epoch-10".into());
    assert_eq!(on_disk(&env), expected);
    // The summary lists them, and so does the run's last line.
    let summary = env.summary("runs/small");
    let listed: Vec<&str> = (summary["best_checkpoints"].as_array().unwrap().iter())
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, names);
    let line = format!("kept: best-1 {} ({:.4})", best[0].0, best[0].1);
    assert!(run.stdout().contains(&line), "{}", run.stdout());
    // Each evaluates to its epoch's val_loss; `best` is best-1.
    for (i, (name, val_loss)) in best.iter().enumerate() {
        for which in [format!("best-{}", i + 1), name.clone()] {
            let eval = env.run(&["evaluate", "runs/small", "--checkpoint", &which]);
            assert_eq!(eval.code(), 0, "{}", eval.stderr());
            let said = format!(
                "(checkpoints/{name}) on validation split, 120 samples: loss {val_loss:.4}"
            );
            assert!(eval.stdout().contains(&said), "{which}: {}", eval.stdout());
        }
    }
    let best = env.run(&["evaluate", "runs/small", "--checkpoint", "best"]);
    assert!(best
        .stdout()
        .contains(&format!("(checkpoints/{})", names[0])));
    let none = env.run(&["evaluate", "runs/small", "--checkpoint", "best-4"]);
    none.fails_with(
        2,
        &[
            "no checkpoint named \"best-4\"",
            "best-1, best-2, best-3, latest",
        ],
    );
}

#[test]
fn a_kill_while_saving_leaves_every_listed_checkpoint_loadable() {
    let env = Env::new();
    config(&env);
    let whole = env.run(&["train", "--config", "keep.toml", "--set", "run.name=whole"]);
    assert_eq!(whole.code(), 0, "{}", whole.stderr());
    // Killed after a checkpoint is complete and named latest, before the ranking (saved), and
    // after the ranking, before older checkpoints go (ranked): at the 5th and 9th saves (the
    // first is before epoch 1), and at the 2nd, where the first epoch's checkpoint is latest
    // beside the one before it and no epoch is ranked yet (the ranking is then empty: the
    // resume once refused it as lost, and the run could not go on).
    let moments = [
        ("saved", 2),
        ("saved", 5),
        ("ranked", 5),
        ("saved", 9),
        ("ranked", 9),
    ];
    for (moment, pass) in moments {
        let _ = std::fs::remove_dir_all(env.path("runs/small"));
        env.killed_at(
            &["train", "--config", "keep.toml"],
            &format!("{moment}:{pass}"),
        );
        let listed = ranking(&env);
        assert_eq!(listed.is_empty(), pass == 2, "{moment}:{pass}");
        for which in (1..=listed.len())
            .map(|i| format!("best-{i}"))
            .chain(["latest".into()])
        {
            let eval = env.run(&["evaluate", "runs/small", "--checkpoint", &which]);
            assert_eq!(eval.code(), 0, "{moment}:{pass} {which}: {}", eval.stderr());
        }
        // Resumed, it ends as the run that was not killed.
        let resumed = env.run(&["train", "--resume", "runs/small"]);
        assert_eq!(resumed.code(), 0, "{}", resumed.stderr());
        let whole_ranking =
            std::fs::read_to_string(env.path("runs/whole/checkpoints/ranking.json"));
        let this = std::fs::read_to_string(env.path("runs/small/checkpoints/ranking.json"));
        assert_eq!(this.unwrap(), whole_ranking.unwrap(), "{moment}:{pass}");
        assert_eq!(
            on_disk(&env).len(),
            4,
            "{moment}:{pass}: {:?}",
            on_disk(&env)
        );
    }
}

#[test]
fn the_keys_refuse_what_they_cannot_mean() {
    let env = Env::new();
    config(&env);
    let train = |set: &str| env.run(&["train", "--config", "keep.toml", "--set", set]);
    train("checkpoint.keep_best=0").fails_with(2, &["checkpoint.keep_best must be > 0, got 0"]);
    train("checkpoint.monitor=\"val_f1\"").fails_with(
        2,
        &[
            "checkpoint.monitor = \"val_f1\" is not a figure this task reports",
            "val_accuracy",
        ],
    );
    train("checkpoint.monitor=\"loss\"").fails_with(2, &["must name a validation metric"]);
    env.write("small.toml", SMALL);
    let alone = env.train_small("x", &["--set", "checkpoint.mode=\"max\""]);
    alone.fails_with(
        2,
        &["checkpoint.mode ranks the checkpoints", "set keep_best too"],
    );
    assert!(!env.path("runs/small").exists(), "nothing was written");
}
