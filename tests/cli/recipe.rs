//! A training recipe, everything on: AdamW, a warmup into a cosine decay, gradient-norm
//! clipping, accumulation and early stopping. Killed mid-epoch and resumed, it ends on the
//! uninterrupted run's weights; early stopping stops where the monitor says, and the best
//! checkpoint holds that epoch's weights.

use serde_json::Value;
use tidemark::train::Checkpoint;

use super::resume::{kill_when, latest_step_of, max_difference, spawn};
use super::{num, Env, Run};

/// 960 training samples in loader batches of 16, two per step: 30 steps an epoch. A warmup of
/// 10 steps into a cosine over 140; checkpoints every 4 steps.
const RECIPE: &str = r#"
[run]
name = "recipe"
seed = 5

[model]
hidden = [48, 32]
dropout = 0.1

[data]
kind = "synthetic"
samples = 1200
features = 16
classes = 4
noise = 2.5
num_workers = 0

[train]
epochs = 5
batch_size = 16
accumulation_steps = 2
optimizer = "adamw"
lr = 0.01
weight_decay = 0.05
clip_grad_norm = 0.5

[train.schedule]
kind = "cosine"
warmup_steps = 10
decay_steps = 140
min_lr = 0.0001

[train.early_stopping]
monitor = "val_loss"
patience = 2

[checkpoint]
every_steps = 4
"#;

const STEPS_PER_EPOCH: usize = 30;

fn epochs(snapshots: &[Value]) -> Vec<&Value> {
    // As the run stands: a resumed epoch's last snapshot replaces an earlier one.
    let mut by_epoch = std::collections::BTreeMap::new();
    for s in snapshots.iter().filter(|s| s["event"] == "epoch") {
        by_epoch.insert(s["epoch"].as_u64().unwrap(), s);
    }
    by_epoch.into_values().collect()
}

/// The cosine-with-warmup rate of optimizer step `s` (1-based), from its formula.
fn expected_lr(s: usize) -> f64 {
    let (lr, min_lr, warmup, decay) = (0.01, 0.0001, 10, 140);
    if s <= warmup {
        return lr * s as f64 / warmup as f64;
    }
    let t = (s - warmup - 1) as f64 / decay as f64;
    min_lr + 0.5 * (lr - min_lr) * (1.0 + (t * std::f64::consts::PI).cos())
}

/// Trains the recipe with `--set` each of `sets`, and checks that it completed.
fn train(env: &Env, sets: &[&str]) -> Run {
    env.write("recipe.toml", RECIPE);
    let mut args = vec!["train", "--config", "recipe.toml"];
    for set in sets {
        args.extend(["--set", set]);
    }
    let run = env.run(&args);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    run
}

#[test]
fn the_recipe_killed_mid_epoch_resumes_to_the_uninterrupted_weights() {
    let env = Env::new();
    train(&env, &["run.name=reference"]);
    let summary = env.summary("runs/reference");
    let steps = summary["steps"].as_u64().unwrap() as usize;
    assert!(
        num(&summary, "clipped_steps") > 0.0,
        "the bound clips some steps"
    );

    // A step inside an epoch (never a multiple of 30), from the clock.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as usize;
    let target = 4 * (1 + nanos % ((steps - 8) / 4));
    eprintln!("killing once the latest checkpoint is at step {target} or later");
    let victim = env.path("runs/victim");
    let mut child = spawn(
        &env,
        &[
            "train",
            "--config",
            "recipe.toml",
            "--set",
            "run.name=victim",
        ],
    );
    let killed = kill_when(&mut child, || {
        latest_step_of(&victim, STEPS_PER_EPOCH).is_some_and(|s| s >= target)
    });
    assert!(killed, "the run ended before step {target}");
    let resumed = env.run(&["train", "--resume", "runs/victim"]);
    assert_eq!(resumed.code(), 0, "{}", resumed.stderr());

    let diff = max_difference(&env.path("runs/reference"), &victim);
    assert!(diff <= 1e-6, "the final weights differ by {diff:e}");
    let best = |dir: &str| Checkpoint::best(&env.path(dir)).unwrap().weights().unwrap();
    assert_eq!(
        best("runs/reference"),
        best("runs/victim"),
        "the same best weights"
    );
    let after = env.summary("runs/victim");
    for key in [
        "epochs",
        "steps",
        "best_epoch",
        "stopped_early",
        "clipped_steps",
    ] {
        assert_eq!(after[key], summary[key], "{key}");
    }
    assert!((num(&after, "best_value") - num(&summary, "best_value")).abs() < 1e-9);
    // Epoch by epoch, the same losses, rates and clipped steps as the run that never stopped.
    let (ours, theirs) = (
        env.snapshots("runs/victim"),
        env.snapshots("runs/reference"),
    );
    let (ours, theirs) = (epochs(&ours), epochs(&theirs));
    assert_eq!(ours.len(), theirs.len());
    for (a, b) in ours.iter().zip(&theirs) {
        for key in ["loss", "val_loss", "lr"] {
            assert!(
                (num(a, key) - num(b, key)).abs() < 1e-9,
                "epoch {}: {key}",
                a["epoch"]
            );
        }
        assert_eq!(a["clipped_steps"], b["clipped_steps"]);
    }
}

#[test]
fn the_schedule_steps_once_per_optimizer_step() {
    let env = Env::new();
    train(&env, &["train.early_stopping.patience=50"]);
    let snapshots = env.snapshots("runs/recipe");
    let epochs = epochs(&snapshots);
    assert_eq!(epochs.len(), 5);
    for s in &epochs {
        // Each epoch's snapshot has the rate of its last step: 30 steps an epoch, whatever the
        // accumulation (2 micro-batches a step).
        let step = s["step"].as_u64().unwrap() as usize;
        assert_eq!(
            step,
            s["epoch"].as_u64().unwrap() as usize * STEPS_PER_EPOCH
        );
        let (got, want) = (num(s, "lr"), expected_lr(step));
        assert!(
            (got - want).abs() < 1e-12,
            "step {step}: lr {got}, expected {want}"
        );
    }
    let clipped: f64 = epochs.iter().map(|s| num(s, "clipped_steps")).sum();
    assert_eq!(clipped, num(&env.summary("runs/recipe"), "clipped_steps"));
}

#[test]
fn early_stopping_stops_where_the_monitor_says_and_best_holds_that_epochs_weights() {
    let env = Env::new();
    // A high rate and no decay overfit the noisy classes within a few epochs.
    let overfit = [
        "train.lr=0.05",
        "train.clip_grad_norm=100",
        "train.schedule.warmup_steps=0",
        "train.schedule.decay_steps=100000",
        "model.dropout=0.0",
    ];
    let run = train(&env, &[&overfit[..], &["train.epochs=30"]].concat());
    let snapshots = env.snapshots("runs/recipe");
    let val: Vec<f64> = epochs(&snapshots)
        .iter()
        .map(|s| num(s, "val_loss"))
        .collect();
    // The rule, computed here from the snapshots: the best epoch is the lowest val_loss so
    // far; the run stops once 2 epochs in a row have not beaten it.
    let (mut best, mut waited, mut stop) = (0, 0, None);
    for (i, &v) in val.iter().enumerate() {
        if i == 0 || v < val[best] {
            (best, waited) = (i, 0);
        } else {
            waited += 1;
            if waited == 2 {
                stop = Some(i + 1);
                break;
            }
        }
    }
    let stop = stop.expect("the run overfits and stops");
    let best = best + 1;
    let summary = env.summary("runs/recipe");
    assert!(stop < 30, "stopped early, after epoch {stop}");
    assert_eq!(summary["epochs"], stop);
    assert_eq!(summary["stopped_early"], true);
    assert_eq!(summary["best_epoch"], best);
    assert_eq!(num(&summary, "best_value"), val[best - 1]);
    let best_dir = format!("runs/recipe/checkpoints/epoch-{best}");
    assert_eq!(
        summary["checkpoint"],
        best_dir.as_str(),
        "the final weights are the best's"
    );
    assert_eq!(summary["best_checkpoint"], best_dir.as_str());
    assert!(
        run.stderr()
            .contains(&format!("stopping after epoch {stop}")),
        "{}",
        run.stderr()
    );
    // Its last line names the epoch its validation figures are from, which is not the one its
    // weights are.
    let said = format!(", epoch {stop}'s val accuracy ");
    assert!(run.stdout().contains(&said), "{}", run.stdout());
    assert!(
        run.stdout()
            .contains(&format!("best epoch {best}, val_loss ")),
        "{}",
        run.stdout()
    );
    // The same run trained for exactly `best` epochs, without early stopping, ends on the
    // weights checkpoints/best holds.
    let epochs_set = format!("train.epochs={best}");
    let upto = [
        "run.name=upto",
        "train.early_stopping.patience=1000",
        &epochs_set,
    ];
    train(&env, &[&overfit[..], &upto].concat());
    let kept = Checkpoint::best(&env.path("runs/recipe")).unwrap();
    assert_eq!(kept.state.epoch, best);
    let trained = Checkpoint::latest(&env.path("runs/upto")).unwrap();
    assert_eq!(kept.weights().unwrap(), trained.weights().unwrap());
    // A run that stopped early has nothing left to resume.
    env.run(&["train", "--resume", "runs/recipe"])
        .fails_with(2, &["the run stopped early after epoch"]);
}
