//! An app of its own on tidemark (`examples/custom_model`: `App::new().kind("sales", ...)`)
//! runs every command on its own model kind from its own binary: its `[model]` keys are
//! checked as a built-in kind's are, a parallel search runs its children from the app's binary
//! under their leases, a killed run resumes, and the built-in kinds come through the same
//! registration as the app's.
//!
//! The app is the example's binary, which `cargo test` builds beside the test binaries.

use std::path::PathBuf;

use serde_json::Value;

use super::{num, Env, Run};

/// The example app's binary: `target/<profile>/examples/custom_model`.
fn app() -> PathBuf {
    let tidemark = PathBuf::from(env!("CARGO_BIN_EXE_tidemark"));
    let path = tidemark.with_file_name("examples").join("custom_model");
    assert!(
        path.is_file(),
        "{} is not built: `cargo test` builds it (or cargo build --example custom_model)",
        path.display()
    );
    path
}

/// The example's config `name` (`sales.toml`, `search.toml`).
fn example(name: &str) -> String {
    let path = format!(
        "{}/examples/custom_model/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path).unwrap()
}

/// The example's `sales.toml`, smaller: a debug build trains it in a few seconds.
fn sales() -> String {
    example("sales.toml")
        .replace("samples = 16384", "samples = 2048")
        .replace("epochs = 6", "epochs = 3")
        .replace("batch_size = 2048", "batch_size = 256")
        .replace("limit = \"12MiB\"", "clear = \"between_runs\"")
        .replace("on_limit = \"shrink\"\n", "")
}

impl Env {
    pub(super) fn app(&self, args: &[&str]) -> Run {
        self.run_program(&app(), args)
    }
}

#[test]
fn the_app_s_own_keys_are_checked_as_a_built_in_kind_s_and_nothing_is_created() {
    let env = Env::new();
    env.write("sales.toml", &sales());
    let bad = sales().replace("width = 256", "widht = 256");
    env.write("typo.toml", &bad);
    let run = |args: &[&str]| env.app(args);
    run(&["train", "--config", "typo.toml"]).fails_with_detail(
        2,
        &[
            "typo.toml:",
            "unknown key model.widht (did you mean model.width?)",
        ],
        &["expected width or samples"],
    );
    let with = |set: &'static str| vec!["train", "--config", "sales.toml", "--set", set];
    run(&with("model.heads=8")).fails_with_detail(
        2,
        &["--set model.heads=8: unknown key model.heads"],
        &["expected width or samples"],
    );
    run(&with("model.width=\"wide\"")).fails_with(
        2,
        &["--set model.width=\"wide\": model.width: invalid type: string \"wide\""],
    );
    run(&with("model.width=0"))
        .fails_with(2, &["--set model.width=0: model.width: must be > 0, got 0"]);
    run(&with("model.kind=\"salez\"")).fails_with(
        2,
        &["model.kind = \"salez\" is not a kind this program knows; it knows cnn, lstm, mlp, sales"],
    );
    // The `tidemark` binary does not know the app's kind.
    env.run(&["validate", "--config", "sales.toml"]).fails_with(
        2,
        &[
            "sales.toml:",
            "model.kind = \"sales\" is not a kind this program knows",
        ],
    );
    assert!(!env.path("runs").exists(), "nothing is created");
    // A search over a key the kind does not have is refused before anything is written.
    let search = example("search.toml").replace("model.width", "model.depth");
    env.write("search.toml", &search);
    run(&["sweep", "--config", "search.toml"]).fails_with_detail(
        2,
        &["unknown key model.depth"],
        &["expected width or samples"],
    );
    assert!(!env.path("runs").exists(), "nothing is created");
}

/// `search.toml` smaller: 16 trials of 3 epochs on 2048 sales, pruned at epoch 1.
pub(super) fn search() -> String {
    example("search.toml")
        .replace("samples = 8192", "samples = 2048")
        .replace("epochs = 9", "epochs = 3")
}

pub(super) fn sweep_json(env: &Env, dir: &str) -> Value {
    let text = std::fs::read_to_string(env.path(dir).join("sweep.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The trials of a `sweep.json`, by number.
pub(super) fn trials(json: &Value) -> Vec<Value> {
    let mut trials = json["trials"].as_array().unwrap().clone();
    trials.sort_by_key(|t| t["trial"].as_u64());
    trials
}

#[test]
fn the_app_s_search_runs_two_trials_at_once_from_its_binary_with_the_sequential_results() {
    let env = Env::new();
    env.write("search.toml", &search());
    let par = env.app(&["sweep", "--config", "search.toml", "--out", "par"]);
    assert_eq!(par.code(), 0, "{}", par.stderr());
    let par = sweep_json(&env, "par/sales-search-sweep");
    assert_eq!(
        (par["parallel"].as_u64(), trials(&par).len()),
        (Some(2), 16)
    );
    let budget = num(&par, "budget_bytes");
    let mut at_once = 0.0f64;
    for t in trials(&par) {
        let peak = num(&t["memory"], "peak_bytes_in_use");
        assert!(peak <= num(&t, "lease_bytes"), "peak above the lease: {t}");
        // The leases running when this trial started, this one's included.
        let start = num(&t, "started_s");
        let running = (trials(&par).iter())
            .filter(|o| num(o, "started_s") <= start && start < num(o, "ended_s"))
            .map(|o| num(o, "lease_bytes"))
            .sum::<f64>();
        at_once = at_once.max(running);
    }
    assert!(
        at_once <= budget,
        "{at_once} B leased at once, over the {budget} B budget"
    );
    let statuses: Vec<String> = (trials(&par).iter())
        .filter_map(|t| Some(t["status"].as_str()?.to_string()))
        .collect();
    let has = |status: &str| statuses.iter().any(|s| s == status);
    assert!(has("pruned") && has("completed"), "{statuses:?}");
    let seq = env.app(&["sweep", "--config", "search.toml", "--parallel", "1"]);
    assert_eq!(seq.code(), 0, "{}", seq.stderr());
    let seq = sweep_json(&env, "runs/sales-search-sweep");
    for (p, s) in trials(&par).iter().zip(trials(&seq)) {
        assert_eq!((&p["name"], &p["status"]), (&s["name"], &s["status"]));
        if p["status"] == "completed" {
            let (a, b) = (num(p, "monitored"), num(&s, "monitored"));
            assert!(
                (a - b).abs() <= 1e-6,
                "{}: {a} in parallel, {b} alone",
                p["name"]
            );
        }
    }
}

#[test]
fn a_killed_app_run_resumes_from_the_app_s_binary_to_the_uninterrupted_run() {
    let env = Env::new();
    // In f32: `evaluate` scores in f32, as the run then validates.
    let f32 = sales().replace("precision = \"bf16\"", "precision = \"f32\"");
    env.write(
        "sales.toml",
        &format!("{f32}\n[checkpoint]\nevery_steps = 2\n"),
    );
    let whole = env.app(&[
        "train",
        "--config",
        "sales.toml",
        "--set",
        "run.name=\"whole\"",
    ]);
    assert_eq!(whole.code(), 0, "{}", whole.stderr());
    // Killed after step 7, in epoch 2 (4 steps an epoch), its latest checkpoint at step 6.
    let count = env.path("count");
    let killed = std::process::Command::new(app())
        .args(["train", "--config", "sales.toml"])
        .current_dir(env.path(""))
        .env("TIDEMARK_FAILPOINT", "step:7:KILL")
        .env("TIDEMARK_FAILPOINT_COUNT", &count)
        .output()
        .unwrap();
    assert_eq!(killed.status.code(), None, "killed by a signal");
    assert!(!env.path("runs/custom-model/summary.json").exists());
    let resumed = env.app(&["train", "--resume", "runs/custom-model"]);
    assert_eq!(resumed.code(), 0, "{}", resumed.stderr());
    let (a, b) = (env.summary("runs/custom-model"), env.summary("runs/whole"));
    for key in ["final_loss", "final_val_loss"] {
        let (x, y) = (num(&a, key), num(&b, key));
        assert!(
            (x - y).abs() <= 1e-6,
            "{key}: {x} resumed, {y} uninterrupted"
        );
    }
    assert_eq!(a["steps"], b["steps"]);
    assert_eq!(a["task"], "sales");
    // The kind's data is its own: its config.toml keeps `[model]`, and no `[data]`.
    let written = std::fs::read_to_string(env.path("runs/custom-model/config.toml")).unwrap();
    assert!(
        written.contains("[model]") && written.contains("kind = \"sales\""),
        "{written}"
    );
    assert!(
        !written.contains("[data]") && !written.starts_with('#'),
        "{written}"
    );
    // Evaluated from the run's own config.toml: its final validation loss.
    let evaluated = env.app(&["evaluate", "runs/custom-model"]);
    assert_eq!(evaluated.code(), 0, "{}", evaluated.stderr());
    let text = std::fs::read_to_string(env.path("runs/custom-model/evaluation.json")).unwrap();
    let evaluation: Value = serde_json::from_str(&text).unwrap();
    let (x, y) = (num(&evaluation, "loss"), num(&a, "final_val_loss"));
    assert!((x - y).abs() <= 1e-6, "evaluated {x}, trained {y}");
}

#[test]
fn a_built_in_kind_comes_through_the_app_s_registration_as_through_the_tidemark_binary() {
    let env = Env::small();
    let app = env.app(&["train", "--config", "small.toml", "--out", "app"]);
    assert_eq!(app.code(), 0, "{}", app.stderr());
    let binary = env.run(&["train", "--config", "small.toml", "--out", "bin"]);
    assert_eq!(binary.code(), 0, "{}", binary.stderr());
    let weights = |dir: &str| {
        let checkpoint = tidemark::train::Checkpoint::latest(&env.path(dir)).unwrap();
        checkpoint.weights().unwrap()
    };
    assert_eq!(
        weights("app/small"),
        weights("bin/small"),
        "the same run, to the bit"
    );
    let (a, b) = (env.summary("app/small"), env.summary("bin/small"));
    assert_eq!(a["final_val_loss"], b["final_val_loss"]);
}

#[test]
fn tpe_over_the_app_s_own_keys_draws_the_same_trials_from_the_same_seed() {
    let env = Env::new();
    // Eight trials, four drawn by TPE from the results before them, over the kind's own key
    // (a range of integers) and the learning rate, one at a time.
    let tpe = search()
        .replace(
            "method = \"grid\"",
            "method = \"tpe\"\ntrials = 8\nseed = 3",
        )
        .replace("parallel = 2", "parallel = 1")
        .replace(
            "model.width = [32, 64, 128, 256]",
            "model.width = [16, 32, 64, 128, 256]",
        )
        .replace(
            "train.lr = [3e-4, 1e-3, 3e-3, 1e-2]",
            "train.lr = { min = 1e-4, max = 3e-2, log = true }",
        );
    env.write("tpe.toml", &tpe);
    let plan = |out: &str| {
        let run = env.app(&["sweep", "--config", "tpe.toml", "--out", out]);
        assert_eq!(run.code(), 0, "{}", run.stderr());
        // Each trial's values (its row), and how many TPE drew (their journal records).
        let dir = env.path(out).join("sales-search-sweep");
        let text = std::fs::read_to_string(dir.join("sweep.json")).unwrap();
        let json: Value = serde_json::from_str(&text).unwrap();
        let mut rows: Vec<(u64, Value)> = (json["trials"].as_array().unwrap().iter())
            .map(|r| (r["trial"].as_u64().unwrap(), r["values"].clone()))
            .collect();
        rows.sort_by_key(|r| r.0);
        let journal = std::fs::read_to_string(dir.join("journal.log")).unwrap();
        let drawn = journal.matches("tidemark:drawn_from").count();
        (rows, drawn)
    };
    let (first, again) = (plan("a"), plan("b"));
    assert_eq!(first.0, again.0, "the same seed, the same trials");
    assert_eq!(first.1, 4, "{first:?}");
    let widths: Vec<&Value> = (first.0.iter()).map(|t| &t.1["model.width"]).collect();
    assert!(widths.iter().all(|w| w.is_i64()), "{widths:?}");
}

#[test]
fn the_app_s_kind_evaluates_and_predicts_on_a_file_it_reads() {
    let env = Env::new();
    let f32 = sales().replace("precision = \"bf16\"", "precision = \"f32\"");
    env.write("sales.toml", &f32);
    let trained = env.app(&["train", "--config", "sales.toml"]);
    assert_eq!(trained.code(), 0, "{}", trained.stderr());
    let file = format!(
        "{}/examples/custom_model/sales.csv",
        env!("CARGO_MANIFEST_DIR")
    );
    let evaluated = env.app(&["evaluate", "runs/custom-model", "--data", &file]);
    assert_eq!(evaluated.code(), 0, "{}", evaluated.stderr());
    let text = std::fs::read_to_string(env.path("runs/custom-model/evaluation.json")).unwrap();
    let evaluation: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(evaluation["samples"], 12);
    let out = env.path("predicted.csv");
    let out = out.to_str().unwrap();
    let predicted = env.app(&[
        "predict",
        "runs/custom-model",
        "--data",
        &file,
        "--out",
        out,
    ]);
    assert_eq!(predicted.code(), 0, "{}", predicted.stderr());
    // The predictions' mean absolute error against the file's amounts is evaluate's.
    let column = |text: &str, k: usize| -> Vec<f64> {
        (text.lines().skip(1))
            .map(|l| l.split(',').nth(k).unwrap().parse().unwrap())
            .collect()
    };
    let predictions = std::fs::read_to_string(out).unwrap();
    assert!(predictions.starts_with("row,amount\n"), "{predictions}");
    let amounts = column(&std::fs::read_to_string(&file).unwrap(), 9);
    let values = column(&predictions, 1);
    assert_eq!(values.len(), 12);
    let mae = values
        .iter()
        .zip(&amounts)
        .map(|(p, a)| (p - a).abs())
        .sum::<f64>()
        / 12.0;
    let evaluated = num(&evaluation["metrics"], "mae");
    assert!(
        (mae - evaluated).abs() < 1e-4,
        "{mae} predicted, {evaluated} evaluated"
    );
    // A malformed file is named, with its line, in one line.
    env.write(
        "bad.csv",
        "f0,f1,f2,f3,f4,f5,f6,f7,store,amount\n0,0,0,0,0,0,0,0,99,1\n",
    );
    env.app(&[
        "predict",
        "runs/custom-model",
        "--data",
        "bad.csv",
        "--out",
        out,
    ])
    .fails_with(2, &["bad.csv:2: store: not a store: \"99\""]);
}

#[test]
fn the_app_names_itself_in_its_help_and_runs_a_command_of_its_own() {
    let env = Env::new();
    let help = env.app(&["--help"]);
    assert_eq!(help.code(), 0);
    let text = help.stdout();
    assert!(text.starts_with("Sales forecasts"), "{text}");
    assert!(text.contains("Usage: custom_model <COMMAND>"), "{text}");
    assert!(text.contains("custom_model train --config"), "{text}");
    assert!(!text.contains("tidemark train"), "{text}");
    assert!(text.contains("  draw "), "{text}");

    let drawn = env.app(&["draw", "--samples", "5", "--out", "drawn.csv"]);
    assert_eq!(drawn.code(), 0, "{}", drawn.stderr());
    let csv = std::fs::read_to_string(env.path("drawn.csv")).unwrap();
    assert_eq!(csv.lines().count(), 6, "{csv}");
    assert!(
        csv.starts_with("f0,f1,f2,f3,f4,f5,f6,f7,store,amount\n"),
        "{csv}"
    );
    // Its usage errors and its own errors exit as tidemark's do.
    let bad = env.app(&["draw", "--samples", "many", "--out", "x.csv"]);
    assert_eq!(bad.code(), 2, "{}", bad.stderr());
    env.app(&["draw", "--out", "no/such/dir/x.csv"])
        .fails_with(1, &["no/such/dir/x.csv"]);
}

#[test]
fn the_app_s_kind_declares_its_metrics_once_and_a_run_checks_its_monitor_before_training() {
    let env = Env::new();
    env.write("sales.toml", &sales());
    // `mae` is declared by the kind (`ModelKind::metrics`) alone: the run knows it before
    // its first step, as a search does.
    let set = ["--set", "train.early_stopping.monitor=\"val_mea\""];
    let run = env.app(&[&["train", "--config", "sales.toml"][..], &set].concat());
    run.fails_with(2, &["val_mea", "it reports val_loss, val_mae"]);
    assert!(!env.path("runs").exists(), "nothing is created");
    let set = [
        "--set",
        "train.early_stopping.monitor=\"val_mae\"",
        "--set",
        "train.epochs=1",
    ];
    let run = env.app(&[&["train", "--config", "sales.toml", "--quiet"][..], &set].concat());
    assert_eq!(run.code(), 0, "{}", run.stderr());
}
