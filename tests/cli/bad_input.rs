//! Broken input to every command, as a user would meet it: a damaged file, a setting the run
//! cannot use, a flag that does not apply. Each is refused before any work with one line naming
//! what is wrong and a documented exit code, and nothing already written is changed.

use super::{Env, SMALL};

/// A two-trial grid of one epoch each, searched in `runs/small-sweep`.
fn searched(env: &Env) {
    let config = format!("{SMALL}\n[sweep]\n[sweep.vary]\ntrain.lr = [0.01, 0.0001]\n");
    env.write("grid.toml", &config);
    let run = env.run(&["sweep", "--config", "grid.toml", "--set", "train.epochs=1"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
}

fn read(env: &Env, rel: &str) -> Vec<u8> {
    std::fs::read(env.path(rel)).unwrap()
}

#[test]
fn a_damaged_trial_summary_is_named_and_nothing_recorded_is_rewritten() {
    let env = Env::small();
    searched(&env);
    let (json, md) = (
        read(&env, "runs/small-sweep/sweep.json"),
        read(&env, "runs/small-sweep/sweep.md"),
    );
    env.write("runs/small-sweep/trial-001/summary.json", "garbage");
    let needles = [
        "runs/small-sweep/trial-001/summary.json",
        "not a run summary",
    ];
    env.run(&["report", "runs/small-sweep"])
        .fails_with(2, &needles);
    env.run(&["sweep", "--resume", "runs/small-sweep"])
        .fails_with(2, &needles);
    assert_eq!(read(&env, "runs/small-sweep/sweep.json"), json);
    assert_eq!(read(&env, "runs/small-sweep/sweep.md"), md);
    // The trial's own directory is not trained again over its damaged record.
    assert_eq!(
        read(&env, "runs/small-sweep/trial-001/summary.json"),
        b"garbage"
    );
}

#[test]
fn a_run_s_damaged_summary_or_lost_final_checkpoint_is_named() {
    let env = Env::small();
    assert_eq!(env.train_small("r", &["--set", "train.epochs=1"]).code(), 0);
    // summary.json names epoch-1 as the final weights; without it, blame that, not a flag.
    std::fs::remove_dir_all(env.path("runs/r/checkpoints/epoch-1")).unwrap();
    env.run(&["evaluate", "runs/r"]).fails_with(
        2,
        &[
            "runs/r/checkpoints/epoch-1/meta.json: missing",
            "runs/r/summary.json names checkpoint \"epoch-1\"",
        ],
    );
    let run = env.run(&["evaluate", "runs/r"]);
    assert!(!run.stderr().contains("--checkpoint:"), "{}", run.stderr());
    let svg = read(&env, "runs/r/memory.svg");
    env.write("runs/r/summary.json", "{");
    for command in ["report", "evaluate"] {
        env.run(&[command, "runs/r"])
            .fails_with(2, &["runs/r/summary.json: not a run summary"]);
    }
    assert_eq!(read(&env, "runs/r/memory.svg"), svg);
}
