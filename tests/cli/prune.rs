//! Pruning a search (`[sweep.prune]`): ASHA pauses trials at their rungs and promotes the best,
//! which then train on exactly as an unpruned search trains them; the median rule stops trials
//! behind the completed trials' median; the best is among the trials trained to the end; pruned
//! trials stay pruned across `--resume`, and pruning works with trials in parallel.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{num, Env, SMALL};

const LRS: &str = "[0.0003, 0.001, 0.002, 0.003, 0.005, 0.008, 0.01, 0.02, 0.05]";

/// Nine trials of four epochs (ASHA's rungs at epochs 1 and 3), with `[sweep]` keys `keys`.
fn search(env: &Env, keys: &str, prune: &str) {
    let text = format!(
        "{SMALL}\n[sweep]\nmonitor = \"val_loss\"\n{keys}\n[sweep.prune]\n{prune}\n\
         [sweep.vary]\ntrain.lr = {LRS}\n"
    );
    env.write("prune.toml", &text);
}

fn sweep(env: &Env, out: &str, extra: &[&str]) -> BTreeMap<u64, Value> {
    let mut args = vec![
        "sweep",
        "--config",
        "prune.toml",
        "--set",
        "train.epochs=4",
        "--set",
        "data.num_workers=0",
        "--out",
        out,
    ];
    args.extend_from_slice(extra);
    let run = env.run(&args);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    rows(env, &format!("{out}/small-sweep"))
}

fn rows(env: &Env, dir: &str) -> BTreeMap<u64, Value> {
    let text = std::fs::read_to_string(env.path(dir).join("sweep.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    let best = json["best"].as_str().unwrap().to_string();
    let rows: BTreeMap<u64, Value> = json["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["trial"].as_u64().unwrap(), t.clone()))
        .collect();
    let best_row = rows.values().find(|r| r["name"] == best.as_str()).unwrap();
    assert_eq!(
        best_row["status"], "completed",
        "the best trained to the end"
    );
    assert_eq!(best_row["rank"], 1);
    rows
}

fn epochs(row: &Value) -> u64 {
    row["epochs"].as_u64().unwrap()
}

/// Each trial's val_loss after epoch 1, from the search's journal (its intermediate values).
fn at_epoch_one(env: &Env, dir: &str) -> Vec<(f64, u64)> {
    std::fs::copy(env.path(dir).join("journal.log"), env.path("journal.log")).unwrap();
    let mut at: Vec<(f64, u64)> = (super::study::replay(env).iter())
        .map(|t| (t.intermediate[&1], t.number as u64))
        .collect();
    at.sort_by(|a, b| a.0.total_cmp(&b.0));
    at
}

#[test]
fn asha_promotes_the_best_third_which_trains_on_exactly_as_unpruned_and_the_rest_is_pruned() {
    let env = Env::new();
    search(&env, "", "method = \"asha\"");
    let asha = sweep(&env, "asha", &[]);
    let full = sweep(&env, "full", &["--set", "sweep.prune.method=\"none\""]);
    assert!(full
        .values()
        .all(|r| r["status"] == "completed" && epochs(r) == 4));
    let mut trained = 0;
    for (trial, row) in &asha {
        trained += epochs(row);
        match row["status"].as_str().unwrap() {
            "completed" => {
                assert_eq!(epochs(row), 4, "{row}");
                // Paused at epochs 1 and 3 and resumed: the same run as the unpruned one.
                let (a, b) = (num(row, "monitored"), num(&full[trial], "monitored"));
                assert!((a - b).abs() < 1e-6, "trial {trial}: {a} against {b}");
            }
            "pruned" => {
                assert!([1, 3].contains(&epochs(row)), "{row}");
                let reason = row["reason"].as_str().unwrap();
                assert!(reason.starts_with("ASHA: ranked "), "{reason}");
                assert!(row["rank"].is_null(), "a pruned trial is not ranked: {row}");
            }
            other => panic!("trial {trial}: {other}"),
        }
    }
    // ASHA may promote early trials that later fall out of the top third, so this is looser
    // than 9 + 3 × 2 + 1; unpruned, 36.
    assert!(trained * 10 <= 36 * 6, "{trained} epochs of 36");
    // The best three at the first rung all went on (⌊9/3⌋), and a pruned trial says so in its
    // own summary.
    for (value, trial) in &at_epoch_one(&env, "asha/small-sweep")[..3] {
        assert!(
            epochs(&asha[trial]) >= 3,
            "trial {trial} ({value}) was promoted"
        );
    }
    let pruned = asha.values().find(|r| r["status"] == "pruned").unwrap();
    let summary = env.summary(&format!(
        "asha/small-sweep/{}",
        pruned["name"].as_str().unwrap()
    ));
    assert_eq!(summary["status"], "pruned");
    assert_eq!(summary["stopped_by"], pruned["reason"]);
    // Resumed, the search trains nothing again: pruned trials stay pruned.
    let resumed = env.run(&["sweep", "--resume", "asha/small-sweep"]);
    assert_eq!(resumed.code(), 0, "{}", resumed.stderr());
    assert!(
        !resumed.stderr().contains("after release"),
        "{}",
        resumed.stderr()
    );
    let again = rows(&env, "asha/small-sweep");
    for (trial, row) in &asha {
        assert_eq!(
            (&again[trial]["status"], epochs(&again[trial])),
            (&row["status"], epochs(row))
        );
    }
}

#[test]
fn the_median_rule_prunes_trials_behind_the_completed_median_after_its_startup() {
    let env = Env::new();
    search(
        &env,
        "order = \"listed\"",
        "method = \"median\"\nstartup = 2",
    );
    let median = sweep(&env, "median", &[]);
    // Listed, the trials train in their numbers' order: the first two complete unjudged.
    assert_eq!(median[&1]["status"], "completed");
    assert_eq!(median[&2]["status"], "completed");
    let pruned: Vec<&Value> = median
        .values()
        .filter(|r| r["status"] == "pruned")
        .collect();
    assert!(!pruned.is_empty(), "{median:?}");
    for row in pruned {
        assert!(epochs(row) < 4, "{row}");
        let reason = row["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("median rule: its best val_loss so far, "),
            "{reason}"
        );
        assert!(reason.contains(" completed trials at epoch "), "{reason}");
    }
}

#[test]
fn asha_in_parallel_pauses_and_promotes_trials_in_child_processes_under_the_budget() {
    let env = Env::new();
    search(&env, "", "method = \"asha\"");
    let par = sweep(&env, "par", &["--parallel", "2"]);
    let text = std::fs::read_to_string(env.path("par/small-sweep/sweep.json")).unwrap();
    let budget = num(&serde_json::from_str(&text).unwrap(), "budget_bytes");
    // Every run of every trial, with its lease: never more than the budget at once.
    let mut runs: Vec<(f64, f64, f64)> = Vec::new();
    for row in par.values() {
        assert!(
            ["completed", "pruned"].contains(&row["status"].as_str().unwrap()),
            "{row}"
        );
        let lease = num(row, "lease_bytes");
        for run in row["runs"].as_array().unwrap() {
            runs.push((run[0].as_f64().unwrap(), run[1].as_f64().unwrap(), lease));
        }
        let n = row["runs"].as_array().unwrap().len();
        match epochs(row) {
            1 => assert_eq!(n, 1, "{row}"),
            3 => assert_eq!(n, 2, "{row}"),
            _ => assert_eq!(n, 3, "paused at both rungs: {row}"),
        }
    }
    for &(at, ..) in &runs {
        let held: f64 = runs
            .iter()
            .filter(|r| r.0 <= at && at < r.1)
            .map(|r| r.2)
            .sum();
        assert!(held <= budget, "{held} leased at {at} s, over {budget}");
    }
    assert!(par.values().any(|r| r["status"] == "completed"));
}

#[test]
fn a_bad_prune_table_is_one_line_naming_the_key_before_anything_trains() {
    let env = Env::new();
    search(&env, "", "method = \"hyperband\"");
    for command in ["validate", "sweep"] {
        let run = env.run(&[command, "--config", "prune.toml"]);
        assert_eq!(run.code(), 2, "{command}: {}", run.stderr());
        assert_eq!(
            run.stderr().trim(),
            "error: prune.toml:26:1: sweep.prune.method: must be \"asha\", \"median\" or \"none\", \
             got \"hyperband\""
        );
    }
    // What `sweep` refuses before it writes anything, `validate` refuses too.
    search(&env, "", "method = \"asha\"\nmin_epochs = 4");
    for command in ["validate", "sweep"] {
        let run = env.run(&[command, "--config", "prune.toml", "--set", "train.epochs=4"]);
        run.fails_with(
            2,
            &["sweep.prune.min_epochs: must be below train.epochs (4), got 4"],
        );
        let run = env.run(&[
            command,
            "--config",
            "prune.toml",
            "--set",
            "sweep.vary.train.epochs=[4, 8]",
        ]);
        run.fails_with(
            2,
            &["sweep.vary.train.epochs: a pruned search compares trials"],
        );
    }
    assert!(!env.path("runs").exists(), "nothing was trained or written");
}

#[test]
fn a_resume_refuses_a_sweep_key_it_cannot_change_and_says_the_ones_it_applies() {
    let env = Env::new();
    search(&env, "", "method = \"asha\"");
    sweep(&env, "runs", &[]);
    let dir = "runs/small-sweep";
    let resume = |set: &str| env.run(&["sweep", "--resume", dir, "--set", set]);
    // The pruner and the trials are the plan's: a change is refused, naming the key.
    resume("sweep.prune.method=\"median\"").fails_with(
        2,
        &[
            "--set sweep.prune.method=\"median\"",
            "planned in its journal",
            "sweep.parallel and sweep.budget",
        ],
    );
    resume("sweep.vary.train.lr=[0.1]").fails_with(2, &["sweep.vary.train.lr"]);
    // A budget that is no size is refused, not ignored.
    resume("sweep.budget=\"lots\"").fails_with(2, &["sweep.budget", "\"lots\""]);
    // How many at once, and their budget: applied, and said.
    let run = resume("sweep.parallel=2");
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert!(
        run.stderr()
            .contains("resumed with sweep.parallel = 2 (planned 1)"),
        "{}",
        run.stderr()
    );
}
