//! The memory advisor: after a run, and at a breach of the limit, it ranks the changes that
//! would lower the training peak by the bytes each would save, from one probed step each. Its
//! estimates are checked here against runs with the change applied.

use serde_json::Value;

use super::fit::WIDE;
use super::{num, start_in_use, Env};

/// Parameters dominate: two layers of 512 over a batch of 16.
const DEEP: &str = r#"
[run]
name = "deep"
seed = 3

[model]
hidden = [512, 512]

[data]
kind = "synthetic"
samples = 256
features = 32
classes = 4
num_workers = 0

[train]
epochs = 1
batch_size = 16
"#;

/// Trains `config` as `name` with `sets` (`key=value`), and returns its summary.
fn train(env: &Env, config: &str, name: &str, sets: &[String]) -> Value {
    let run_name = format!("run.name=\"{name}\"");
    let mut args = vec!["train", "--config", config, "--quiet", "--set", &run_name];
    for s in sets {
        args.extend(["--set", s]);
    }
    let run = env.run(&args);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    env.summary(&format!("runs/{name}"))
}

fn levers(summary: &Value) -> Vec<Value> {
    summary["advice"]["levers"]
        .as_array()
        .expect("advice")
        .clone()
}

fn lever<'a>(levers: &'a [Value], name: &str) -> &'a Value {
    levers
        .iter()
        .find(|l| l["lever"] == name)
        .unwrap_or_else(|| panic!("no {name} in {levers:?}"))
}

fn sets(lever: &Value) -> Vec<String> {
    lever["set"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// Runs `config` with `lever` applied and asserts that the training peak falls by the
/// estimate, within 15% of the measured saving or 1% of the peak.
fn check_estimate(env: &Env, config: &str, base: &Value, lever: &Value, name: &str) -> f64 {
    let with = train(env, config, name, &sets(lever));
    let peak = num(&base["advice"], "peak");
    let measured = peak - num(&with["advice"], "peak");
    let estimated = num(lever, "saves");
    assert!(
        (estimated - measured).abs() <= (0.15 * measured.abs()).max(0.01 * peak),
        "{}: estimated {estimated}, measured {measured} (peak {peak})",
        lever["lever"]
    );
    measured
}

#[test]
fn the_advisor_ranks_the_levers_and_its_estimates_match_runs_with_them() {
    let env = Env::new();
    env.write("wide.toml", WIDE);
    let base = train(&env, "wide.toml", "base", &[]);
    let levers = levers(&base);
    let names: Vec<&str> = levers
        .iter()
        .map(|l| l["lever"].as_str().unwrap())
        .collect();
    for expected in [
        "accumulation x2",
        "accumulation x4",
        "a smaller micro-batch",
        "gradient checkpointing",
        "bf16 compute",
        "SGD in place of the optimizer",
    ] {
        assert!(names.contains(&expected), "{expected} not in {names:?}");
    }
    let saves: Vec<f64> = levers.iter().map(|l| num(l, "saves")).collect();
    assert!(
        saves.windows(2).all(|w| w[0] >= w[1]),
        "not ranked: {saves:?}"
    );
    // The largest lever here is accumulation x4: a quarter of the activations.
    assert_eq!(names[0], "accumulation x4");
    assert_eq!(
        sets(&levers[0]),
        ["train.batch_size=512", "train.accumulation_steps=4"]
    );
    let measured = check_estimate(&env, "wide.toml", &base, &levers[0], "acc4");
    let own = num(&base["advice"], "peak") - start_in_use(&env.snapshots("runs/base"));
    assert!(measured > 0.3 * own, "{measured} of the run's own {own}");
    check_estimate(
        &env,
        "wide.toml",
        &base,
        lever(&levers, "bf16 compute"),
        "bf16",
    );
    let sgd = lever(&levers, "SGD in place of the optimizer");
    check_estimate(&env, "wide.toml", &base, sgd, "sgd");
    // The report prints the ranking with the changes to make.
    let report = env.run(&["report", "runs/base"]);
    assert_eq!(report.code(), 0, "{}", report.stderr());
    let out = report.stdout();
    assert!(
        out.contains("what would lower the training peak of"),
        "{out}"
    );
    assert!(
        out.contains("accumulation x4") && out.contains("--set train.accumulation_steps=4"),
        "{out}"
    );
}

#[test]
fn on_a_parameter_heavy_model_accumulation_and_bf16_cannot_help_and_the_report_says_why() {
    let env = Env::new();
    env.write("deep.toml", DEEP);
    let base = train(&env, "deep.toml", "base", &[]);
    let levers = levers(&base);
    let acc = lever(&levers, "accumulation x2");
    assert!(num(acc, "saves") < 0.0, "{acc}");
    let measured = check_estimate(&env, "deep.toml", &base, acc, "acc2");
    assert!(
        measured < 0.0,
        "accumulation should raise this peak: {measured}"
    );
    let bf16 = lever(&levers, "bf16 compute");
    check_estimate(&env, "deep.toml", &base, bf16, "bf16");
    // SGD drops Adam's two moments: two f32 copies of the parameters.
    let params = (32 * 512 + 512) + (512 * 512 + 512) + (512 * 4 + 4);
    let sgd = lever(&levers, "SGD in place of the optimizer");
    assert_eq!(num(sgd, "saves"), (2 * 4 * params) as f64);
    assert_eq!(levers[0]["lever"], "SGD in place of the optimizer");
    let out = env.run(&["report", "runs/base"]).stdout();
    let cannot = out
        .lines()
        .find(|l| l.trim_start().starts_with("cannot help:"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        cannot.contains("accumulation x2 adds") && cannot.contains("second gradient set"),
        "{cannot}"
    );
}

#[test]
fn on_sgd_with_momentum_the_lever_turns_momentum_off_and_saves_the_buffer() {
    let env = Env::new();
    env.write("deep.toml", DEEP);
    let momentum = [
        "train.optimizer=\"sgd\"".to_string(),
        "train.momentum=0.9".to_string(),
        "train.nesterov=true".to_string(),
    ];
    let base = train(&env, "deep.toml", "base", &momentum);
    let levers = levers(&base);
    let lever = lever(&levers, "SGD without momentum");
    assert_eq!(sets(lever), ["train.momentum=0", "train.nesterov=false"]);
    // One f32 buffer the size of the parameters.
    let params = (32 * 512 + 512) + (512 * 512 + 512) + (512 * 4 + 4);
    assert_eq!(num(lever, "saves"), (4 * params) as f64);
    let with: Vec<String> = momentum.iter().cloned().chain(sets(lever)).collect();
    let measured = num(&base["advice"], "peak")
        - num(&train(&env, "deep.toml", "plain", &with)["advice"], "peak");
    assert!(
        (measured - (4 * params) as f64).abs() <= 0.01 * num(&base["advice"], "peak"),
        "{measured}"
    );
}

#[test]
fn a_breach_names_the_levers_that_fit_and_the_first_one_does() {
    let env = Env::new();
    env.write("wide.toml", WIDE);
    let base = train(&env, "wide.toml", "base", &[]);
    let peak = num(&base["advice"], "peak");
    let start = start_in_use(&env.snapshots("runs/base"));
    // A limit three quarters of the way up from the run's start: the micro-batch of 2048
    // breaches it.
    let limit = format!("memory.limit={}", (start + 0.75 * (peak - start)) as u64);
    let set_limit = ["--set", &limit];
    let mut args = vec![
        "train",
        "--config",
        "wide.toml",
        "-q",
        "--set",
        "run.name=\"capped\"",
    ];
    args.extend(set_limit);
    let capped = env.run(&args);
    capped.fails_with_detail(
        3,
        &["memory limit"],
        &[
            "the memory advisor estimates that each of these fits alone: ",
            "--set train.batch_size=",
        ],
    );
    let stderr = capped.stderr();
    let first = stderr
        .split("fits alone: ")
        .nth(1)
        .and_then(|rest| rest.split(" saves ").next())
        .unwrap();
    let summary = env.summary("runs/capped");
    let levers = levers(&summary);
    let mut fixed = sets(lever(&levers, first));
    fixed.push(limit.clone());
    train(&env, "wide.toml", "fixed", &fixed);
    let breaches = env
        .snapshots("runs/fixed")
        .into_iter()
        .filter(|s| s["action"] == "limit" || s["action"] == "shrink")
        .count();
    assert_eq!(breaches, 0);
}
