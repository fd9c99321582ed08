//! `tidemark sweep` with a `[sweep]` table: a grid or a random search, each trial in its own
//! directory with its resolved config, checked before any trains, ranked by the monitored
//! metric, failed trials recorded, and memory released between trials.

use serde_json::Value;

use super::{num, Env, SMALL};

fn sweep_json(env: &Env, dir: &str) -> Value {
    let text = std::fs::read_to_string(env.path(dir).join("sweep.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_grid_trains_every_combination_ranks_them_and_names_the_best_config() {
    let env = Env::new();
    let config = format!(
        "{SMALL}\n[sweep]\n[sweep.vary]\ntrain.lr = [0.01, 0.0001]\nmodel.hidden = [[8], [32]]\n"
    );
    env.write("grid.toml", &config);
    let run = env.run(&["sweep", "--config", "grid.toml", "--set", "train.epochs=2"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let out = run.stdout();
    assert!(out.contains("sweep: 4 trials (0 failed)"), "{out}");
    let json = sweep_json(&env, "runs/small-sweep");
    assert_eq!(json["monitor"], "val_loss");
    let trials = json["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 4);
    // Ranked: ranks 1..4, each val_loss no lower than the one before.
    let values: Vec<f64> = trials.iter().map(|t| num(t, "monitored")).collect();
    assert!(values.windows(2).all(|w| w[0] <= w[1]), "{values:?}");
    let ranks: Vec<u64> = trials.iter().map(|t| t["rank"].as_u64().unwrap()).collect();
    assert_eq!(ranks, [1, 2, 3, 4]);
    // Each trial's directory holds its resolved config with the trial's values, and the
    // monitored value is its summary's.
    for t in trials {
        let name = t["name"].as_str().unwrap();
        let dir = env.path("runs/small-sweep").join(name);
        let resolved = std::fs::read_to_string(dir.join("config.toml")).unwrap();
        let cfg = tidemark::config::parse(&resolved, "config.toml", &[]).unwrap();
        // Typed in sweep.json: the number itself.
        assert_eq!(Some(cfg.train.lr), t["values"]["train.lr"].as_f64());
        let summary = env.summary(&format!("runs/small-sweep/{name}"));
        assert_eq!(num(&summary, "final_val_loss"), num(t, "monitored"));
        // Released between trials: nothing kept in use beyond 1% of the trial's peak.
        let memory = &t["memory"];
        assert!(num(memory, "retained_bytes_in_use") <= 0.01 * num(memory, "peak_bytes_in_use"));
    }
    let best = trials[0]["name"].as_str().unwrap();
    assert!(out.contains(&format!("Best: {best} (")), "{out}");
    let md = std::fs::read_to_string(env.path("runs/small-sweep/sweep.md")).unwrap();
    assert!(
        md.contains("| rank | trial | model.hidden | train.lr | val_loss |"),
        "{md}"
    );
    assert!(md.contains("Every trial released its memory."), "{md}");
}

/// Each trial's place in its process's training order (its summary's `run_in_process`).
/// A varied key brings its own defaults to each trial, as a file of the trial's values would:
/// the optimizer's keys (an SGD trial has momentum, no betas), and dynamic loss scaling with
/// f16. (Trials built from the base config as resolved took Adam's betas into the SGD trial,
/// which refused it, and f32's loss scaling into the f16 one.)
#[test]
fn a_varied_key_brings_its_own_defaults_to_each_trial() {
    let env = Env::new();
    let vary =
        "\"train.optimizer\" = [\"adam\", \"sgd\"]\n\"train.precision\" = [\"f32\", \"f16\"]";
    let config = format!("{SMALL}\n[sweep]\n[sweep.vary]\n{vary}\n");
    env.write("grid.toml", &config);
    let run = env.run(&["sweep", "--config", "grid.toml", "--set", "train.epochs=1"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert!(
        run.stdout().contains("sweep: 4 trials (0 failed)"),
        "{}",
        run.stdout()
    );
    for t in sweep_json(&env, "runs/small-sweep")["trials"]
        .as_array()
        .unwrap()
    {
        let dir = env
            .path("runs/small-sweep")
            .join(t["name"].as_str().unwrap());
        let resolved = std::fs::read_to_string(dir.join("config.toml")).unwrap();
        let train = tidemark::config::parse(&resolved, "config.toml", &[])
            .unwrap()
            .train;
        let (optimizer, precision) = (
            &t["values"]["train.optimizer"],
            &t["values"]["train.precision"],
        );
        let sgd = optimizer == "sgd";
        assert_eq!(
            (train.betas.is_some(), train.momentum),
            (!sgd, sgd.then_some(0.0)),
            "{t}"
        );
        let dynamic = train.loss_scaling() == tidemark::config::LossScaling::Dynamic;
        assert_eq!(dynamic, precision == "f16", "{t}");
    }
}

fn trained_as(env: &Env, dir: &str, trials: &[&str]) -> Vec<u64> {
    trials
        .iter()
        .map(|t| {
            let summary = env.summary(&format!("{dir}/{t}"));
            summary["run_in_process"].as_u64().unwrap()
        })
        .collect()
}

#[test]
fn trials_train_largest_first_by_a_probed_step_unless_listed() {
    let env = Env::new();
    let config = format!(
        "{SMALL}\n[sweep]\n[sweep.vary]\nmodel.hidden = [[8], [256, 256]]\ntrain.lr = [0.01, 0.001]\n"
    );
    env.write("grid.toml", &config);
    let run = env.run(&["sweep", "--config", "grid.toml", "--set", "train.epochs=1"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    // Progress and notes go to stderr.
    let told = run.stderr();
    assert!(
        told.contains("sweep: probed one step of 4 trials in"),
        "{told}"
    );
    let text = std::fs::read_to_string(env.path("runs/small-sweep/preflight.json")).unwrap();
    let preflight: Value = serde_json::from_str(&text).unwrap();
    let probes = preflight["probes"].as_array().unwrap();
    let bytes = |trial: u64| {
        let probe = probes.iter().find(|p| p["trial"] == trial).unwrap();
        probe["step_bytes"].as_u64().unwrap()
    };
    // [256, 256] (trials 3, 4) holds more than [8] (1, 2) in one step, and trains first.
    assert!(bytes(3) > 4 * bytes(1), "{preflight}");
    let names = ["trial-001", "trial-002", "trial-003", "trial-004"];
    let order = trained_as(&env, "runs/small-sweep", &names);
    assert!(order[2] <= 2 && order[3] <= 2, "{order:?}");
    let trained: Vec<u64> = preflight["trained_in_order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap())
        .collect();
    let mut by_run: Vec<(u64, u64)> = order.iter().zip(1..).map(|(&r, t)| (r, t)).collect();
    by_run.sort();
    assert_eq!(trained, by_run.iter().map(|&(_, t)| t).collect::<Vec<_>>());
    // Listed: as numbered, with no probe; the same trials reach the same values.
    let listed = env.run(&[
        "sweep",
        "--config",
        "grid.toml",
        "--set",
        "train.epochs=1",
        "--set",
        "sweep.order=\"listed\"",
        "--out",
        "listed",
    ]);
    assert_eq!(listed.code(), 0, "{}", listed.stderr());
    assert!(!listed.stderr().contains("probed"), "{}", listed.stderr());
    assert!(!env.path("listed/small-sweep/preflight.json").exists());
    assert_eq!(trained_as(&env, "listed/small-sweep", &names), [1, 2, 3, 4]);
    assert_eq!(
        ranking(&sweep_json(&env, "listed/small-sweep")),
        ranking(&sweep_json(&env, "runs/small-sweep"))
    );
}

#[test]
fn a_random_search_draws_the_same_trials_from_its_seed_and_resumes_them() {
    let env = Env::new();
    let config = format!(
        "{SMALL}\n[sweep]\nmethod = \"random\"\ntrials = 3\nseed = 11\nmonitor = \"val_accuracy\"\n\
         [sweep.vary]\ntrain.lr = {{ min = 0.0001, max = 0.01, log = true }}\n"
    );
    env.write("random.toml", &config);
    let args = [
        "sweep",
        "--config",
        "random.toml",
        "--set",
        "train.epochs=1",
    ];
    assert_eq!(env.run(&args).code(), 0);
    assert_eq!(env.run(&args).code(), 0);
    let lrs = |dir: &str| -> Vec<String> {
        let plan: Value = serde_json::from_str(
            &std::fs::read_to_string(env.path(dir).join("plan.json")).unwrap(),
        )
        .unwrap();
        let trials = plan["search"]["trials"].as_array().unwrap().clone();
        trials
            .iter()
            .map(|t| t["values"]["train.lr"].to_string())
            .collect()
    };
    let first = lrs("runs/small-sweep");
    assert_eq!(first.len(), 3);
    assert_eq!(
        first,
        lrs("runs/small-sweep-2"),
        "the same seed draws the same trials"
    );
    for lr in &first {
        let lr: f64 = lr.parse().unwrap();
        assert!((1e-4..=1e-2).contains(&lr), "{lr}");
    }
    // Higher accuracy ranks first.
    let json = sweep_json(&env, "runs/small-sweep");
    let values: Vec<f64> = json["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| num(t, "monitored"))
        .collect();
    assert!(values.windows(2).all(|w| w[0] >= w[1]), "{values:?}");
    // A resumed search keeps its finished trials and trains none again.
    let summary = env.path("runs/small-sweep/trial-002/summary.json");
    let written = std::fs::metadata(&summary).unwrap().modified().unwrap();
    std::fs::remove_file(env.path("runs/small-sweep/sweep.json")).unwrap();
    let resumed = env.run(&["sweep", "--resume", "runs/small-sweep"]);
    assert_eq!(resumed.code(), 0, "{}", resumed.stderr());
    assert_eq!(
        std::fs::metadata(&summary).unwrap().modified().unwrap(),
        written
    );
    assert_eq!(
        sweep_json(&env, "runs/small-sweep")["trials"],
        json["trials"]
    );
}

#[test]
fn a_bad_value_in_the_table_fails_before_anything_trains() {
    let env = Env::new();
    let config = format!("{SMALL}\n[sweep]\n[sweep.vary]\ntrain.lr = [0.001, -0.5]\n");
    env.write("bad.toml", &config);
    env.run(&["sweep", "--config", "bad.toml"])
        .fails_with(2, &["[sweep] trial-002", "train.lr=-0.5", "train.lr"]);
    assert!(!env.path("runs").exists(), "nothing trained, no directory");
    let range =
        format!("{SMALL}\n[sweep]\n[sweep.vary]\ntrain.lr = {{ min = 0.001, max = 0.1 }}\n");
    env.write("range.toml", &range);
    env.run(&["sweep", "--config", "range.toml"]).fails_with(
        2,
        &[
            "range.toml",
            "sweep.vary.train.lr: a range needs method = \"random\"",
        ],
    );
    env.run(&["sweep", "--config", "range.toml", "--runs", "3"])
        .fails_with(2, &["--runs repeats one config"]);
}

#[test]
fn a_failed_trial_is_recorded_with_its_reason_and_the_search_goes_on() {
    let env = Env::new();
    // The second trial's limit is below what the model holds at rest on any machine: its
    // weights, gradients and Adam's moments alone (676 parameters of 16 bytes) are 10.6 KiB.
    let config = format!(
        "{SMALL}\n[memory]\non_limit = \"fail\"\n[sweep]\n[sweep.vary]\nmemory.limit = [\"1GiB\", \"8KiB\"]\n"
    );
    env.write("fail.toml", &config);
    let run = env.run(&["sweep", "--config", "fail.toml", "--set", "train.epochs=1"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert!(
        run.stdout().contains("sweep: 2 trials (1 failed)"),
        "{}",
        run.stdout()
    );
    let json = sweep_json(&env, "runs/small-sweep");
    let trials = json["trials"].as_array().unwrap();
    assert_eq!(trials[0]["name"], "trial-001");
    assert_eq!(trials[0]["rank"], 1);
    assert_eq!(trials[1]["status"], "failed");
    assert!(trials[1]["rank"].is_null());
    let reason = trials[1]["reason"].as_str().unwrap();
    assert!(reason.contains("memory limit 8.0 KiB exceeded"), "{reason}");
}

/// A search whose every trial failed found nothing: exit code 5 and a last line saying so with
/// the first trial's reason, one after another and in parallel; its files record each failure.
#[test]
fn a_search_whose_every_trial_failed_exits_5_with_the_first_reason() {
    let env = Env::new();
    let config = format!(
        "{SMALL}\n[memory]\non_limit = \"fail\"\n[sweep]\n[sweep.vary]\nmemory.limit = [\"8KiB\", \"9KiB\"]\n"
    );
    env.write("doomed.toml", &config);
    for (parallel, out) in [("1", "one"), ("2", "two")] {
        let run = env.run(&[
            "sweep",
            "--config",
            "doomed.toml",
            "--set",
            "train.epochs=1",
            "--parallel",
            parallel,
            "--out",
            out,
        ]);
        assert_eq!(run.code(), 5, "{}", run.stderr());
        let stderr = run.stderr();
        let last = stderr.trim_end().lines().last().unwrap();
        assert!(
            last.starts_with(
                "error: every trial of the search failed (2 of 2); the first, trial-001: memory \
                 limit 8.0 KiB exceeded"
            ),
            "{stderr}"
        );
        assert!(last.len() < 300, "{} characters: {last}", last.len());
        assert!(
            run.stdout().contains("sweep: 2 trials (2 failed)"),
            "{}",
            run.stdout()
        );
        let json = sweep_json(&env, &format!("{out}/small-sweep"));
        let trials = json["trials"].as_array().unwrap();
        assert!(trials.iter().all(|t| t["status"] == "failed"), "{json}");
    }
}

/// The journal is a search's only state: with every view deleted (`plan.json`, `sweep.json`,
/// `sweep.md`, `sweep.svg`), a stopped search resumes to the ranking of one never stopped and
/// writes the same plan again, and a report rebuilds the same views; without its journal, both
/// are refused, naming it, and nothing is written.
#[test]
fn a_search_without_its_views_resumes_and_reports_the_same_and_without_its_journal_is_refused() {
    let env = Env::new();
    let config = format!(
        "{SMALL}
[sweep]
[sweep.vary]
train.lr = [0.001, 0.003, 0.01, 0.03]
"
    );
    env.write("grid.toml", &config);
    let whole = env.run(&["sweep", "--config", "grid.toml", "--out", "whole"]);
    assert_eq!(whole.code(), 0, "{}", whole.stderr());
    let views = ["plan.json", "sweep.json", "sweep.md", "sweep.svg"];
    let dir = env.path("runs/small-sweep");
    let gone = || {
        for view in views {
            let _ = std::fs::remove_file(dir.join(view));
        }
    };
    // Stopped after its second trial ended.
    env.killed_at(&["sweep", "--config", "grid.toml"], "ended:2");
    let plan = std::fs::read_to_string(dir.join("plan.json")).unwrap();
    gone();
    let resumed = env.run(&["sweep", "--resume", "runs/small-sweep"]);
    assert_eq!(resumed.code(), 0, "{}", resumed.stderr());
    let full = sweep_json(&env, "whole/small-sweep");
    assert_eq!(
        ranking(&sweep_json(&env, "runs/small-sweep")),
        ranking(&full)
    );
    let written = std::fs::read_to_string(dir.join("plan.json")).unwrap();
    assert_eq!(
        written, plan,
        "the plan is the journal's, written again as it was"
    );
    let table = std::fs::read_to_string(dir.join("sweep.md")).unwrap();
    let json = std::fs::read_to_string(dir.join("sweep.json")).unwrap();
    gone();
    let report = env.run(&["report", "runs/small-sweep"]);
    assert_eq!(report.code(), 0, "{}", report.stderr());
    assert_eq!(
        std::fs::read_to_string(dir.join("sweep.md")).unwrap(),
        table
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("sweep.json")).unwrap(),
        json
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("plan.json")).unwrap(),
        plan
    );
    assert!(dir.join("sweep.svg").is_file());
    // Without its journal: refused, naming it, and nothing written.
    std::fs::remove_file(dir.join("journal.log")).unwrap();
    let before = super::outside::tree(env.dir.path());
    for args in [
        &["sweep", "--resume", "runs/small-sweep"][..],
        &["report", "runs/small-sweep"],
    ] {
        env.run(args).fails_with(
            2,
            &["runs/small-sweep/journal.log: is missing, and its trial-001 and 3 more trained here"],
        );
        assert_eq!(
            super::outside::tree(env.dir.path()),
            before,
            "{args:?} wrote"
        );
    }
}

/// The ranking in `sweep.json` as (trial, monitored value) pairs.
fn ranking(json: &Value) -> Vec<(String, f64)> {
    let trials = json["trials"].as_array().unwrap();
    trials
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_string(), num(t, "monitored")))
        .collect()
}

#[test]
fn three_shards_at_once_are_workers_of_one_study_with_the_ranking_of_one_process() {
    let env = Env::new();
    let config = format!(
        "{SMALL}\n[sweep]\n[sweep.vary]\ntrain.lr = [0.01, 0.003, 0.001]\nmodel.hidden = [[8], [16]]\n"
    );
    env.write("grid.toml", &config);
    let common = ["sweep", "--config", "grid.toml", "--set", "train.epochs=1"];
    let whole = env.run(&[&common[..], &["--out", "one"]].concat());
    assert_eq!(whole.code(), 0, "{}", whole.stderr());
    // Three processes at once, each told its task the way a scheduler does: the first two by
    // a Slurm job array's variables, the third by a Kubernetes Indexed Job's index.
    let shards: Vec<std::process::Child> = [
        vec![
            ("SLURM_ARRAY_TASK_ID", "1"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ],
        vec![
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ],
        vec![("JOB_COMPLETION_INDEX", "2")],
    ]
    .into_iter()
    .map(|vars| {
        let mut args: Vec<&str> = common.to_vec();
        args.extend(["--out", "shared", "--shards", "3"]);
        std::process::Command::new(env!("CARGO_BIN_EXE_tidemark"))
            .args(&args)
            .envs(vars)
            .current_dir(env.path("."))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    })
    .collect();
    for child in shards {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The tasks were workers of one study, in the sweep directory's journal: no task owns a
    // share of the trials, and each trial was trained to the end once.
    let dir = "shared/small-sweep";
    let files: Vec<String> = std::fs::read_dir(env.path(dir))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(!files.iter().any(|f| f.contains("shard")), "{files:?}");
    let journal = std::fs::read_to_string(env.path(dir).join("journal.log")).unwrap();
    let completed = journal
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|op| op["op_code"] == 6 && op["state"] == 1)
        .count();
    assert_eq!(completed, 6, "{journal}");
    let study = env.run(&["report", &format!("{dir}/journal.log")]);
    assert!(
        study.stdout().contains("6 trials: 6 completed"),
        "{}",
        study.stdout()
    );
    let report = env.run(&["report", dir]);
    assert_eq!(report.code(), 0, "{}", report.stderr());
    let out = report.stdout();
    assert!(
        out.contains("report: 6 trials: 6 completed, 0 pruned, 0 failed, 0 not run yet"),
        "{out}"
    );
    // Each worker's first trial carries its process's one-time state, and is not flagged.
    assert!(out.contains("Every trial released its memory."), "{out}");
    let merged = ranking(&sweep_json(&env, dir));
    let one = ranking(&sweep_json(&env, "one/small-sweep"));
    assert_eq!(merged.len(), 6);
    assert_eq!(
        merged, one,
        "same trials, same seeds, same metrics, same order"
    );
}

#[test]
fn a_shard_refuses_a_directory_planned_with_other_trials() {
    let env = Env::new();
    env.write(
        "a.toml",
        &format!("{SMALL}\n[sweep]\n[sweep.vary]\ntrain.lr = [0.01, 0.001]\n"),
    );
    env.write(
        "b.toml",
        &format!("{SMALL}\n[sweep]\n[sweep.vary]\ntrain.lr = [0.02, 0.002]\n"),
    );
    let shard = ["--set", "train.epochs=1", "--shard", "0/2"];
    assert_eq!(
        env.run(&[&["sweep", "--config", "a.toml"][..], &shard].concat())
            .code(),
        0
    );
    // The journal says what the directory holds: its plan.json, a view, is not read.
    std::fs::remove_file(env.path("runs/small-sweep/plan.json")).unwrap();
    env.run(&[&["sweep", "--config", "b.toml"][..], &shard].concat())
        .fails_with(2, &["runs/small-sweep", "holds a sweep with other trials"]);
    assert!(!env.path("runs/small-sweep/plan.json").exists());
}

#[test]
fn a_trial_stopped_before_its_first_checkpoint_starts_again_in_its_own_directory() {
    let env = Env::new();
    let config = format!("{SMALL}\n[sweep]\n[sweep.vary]\ntrain.lr = [0.01, 0.001]\n");
    env.write("grid.toml", &config);
    let run = env.run(&["sweep", "--config", "grid.toml", "--set", "train.epochs=1"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    // What a signal in a trial's set-up leaves: its run directory, no checkpoint, no summary.
    let trial = env.path("runs/small-sweep/trial-001");
    std::fs::remove_dir_all(trial.join("checkpoints")).unwrap();
    std::fs::remove_file(trial.join("summary.json")).unwrap();
    let resumed = env.run(&["sweep", "--resume", "runs/small-sweep"]);
    assert_eq!(resumed.code(), 0, "{}", resumed.stderr());
    assert!(
        !env.path("runs/small-sweep/trial-001-2").exists(),
        "trained beside it"
    );
    assert!(trial.join("checkpoints/latest").is_file());
    let json = sweep_json(&env, "runs/small-sweep");
    for t in json["trials"].as_array().unwrap() {
        assert_eq!(t["status"], "completed", "{t}");
    }
}
