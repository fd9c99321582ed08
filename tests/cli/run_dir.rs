//! The run directory, the command line and its errors.

use super::*;

#[test]
fn train_writes_the_run_directory_with_one_snapshot_per_epoch() {
    let env = Env::small();
    let run = env.run(&["train", "--config", "small.toml"]);
    assert_eq!(run.code(), 0, "stderr: {}", run.stderr());
    assert!(
        run.stderr().contains("epoch 3"),
        "progress shown: {}",
        run.stderr()
    );
    assert!(run.stdout().contains("small: 3 epochs"), "{}", run.stdout());

    let dir = "runs/small";
    let resolved = std::fs::read_to_string(env.path(dir).join("config.toml")).unwrap();
    assert!(
        resolved.contains("batch_size = 32") && resolved.contains("accumulation_steps = 1"),
        "{resolved}"
    );

    let snaps = env.snapshots(dir);
    let events: Vec<&str> = snaps.iter().map(|s| s["event"].as_str().unwrap()).collect();
    assert_eq!(
        events,
        [
            "run_start",
            "epoch",
            "epoch",
            "epoch",
            "memory_action",
            "run_end"
        ]
    );
    // clear = "between_runs" (the default): a cleanup, then the verified release.
    assert_eq!(snaps[4]["action"], "cleanup");
    let end = &snaps[5];
    let retained = end["retained_bytes_in_use"].as_i64().unwrap();
    assert!(
        retained.unsigned_abs() as f64 <= 0.01 * num(end, "peak_bytes_in_use"),
        "a run keeps at most 1% of its peak: {end}"
    );
    assert!(
        num(end, "rss_after_bytes") > 0.0
            && num(end, "rss_peak_bytes") >= num(end, "rss_after_bytes")
    );
    assert!(snaps
        .iter()
        .all(|s| num(s, "rss_bytes") > 0.0 && s["micro_batch"] == 32));
    assert_eq!(
        std::fs::read_to_string(env.path(dir).join("checkpoints/latest")).unwrap(),
        "epoch-3"
    );
    assert!(env
        .path(dir)
        .join("checkpoints/epoch-3/model.bpk")
        .is_file());
    let epochs: Vec<&Value> = snaps.iter().filter(|s| s["event"] == "epoch").collect();
    for (i, s) in epochs.iter().enumerate() {
        assert_eq!(s["epoch"], i + 1);
        assert_eq!(s["source"], "host");
        for key in ["bytes_in_use", "bytes_reserved", "peak_bytes_in_use"] {
            assert!(num(s, key) > 0.0, "{key} is zero in {s}");
        }
        assert!(num(s, "peak_bytes_in_use") >= num(s, "bytes_in_use"));
        assert!(num(s, "samples_per_sec") > 0.0 && num(s, "elapsed_s") > 0.0);
        assert!((0.0..=1.0).contains(&num(s, "val_accuracy")));
    }
    // 960 training samples in micro-batches of 32: 30 steps per epoch.
    assert_eq!(epochs[2]["step"], 90);
    let first = num(epochs[0], "loss");
    let last = num(epochs[2], "loss");
    assert!(last < first, "loss should fall: {first} -> {last}");

    let summary = env.summary(dir);
    assert_eq!(summary["status"], "completed");
    assert_eq!(summary["epochs"], 3);
    assert!(num(&summary, "final_val_accuracy") > 0.5, "{summary}");
}

#[test]
fn a_second_run_with_the_same_name_does_not_touch_the_first() {
    let env = Env::small();
    let args = [
        "train",
        "--config",
        "small.toml",
        "--set",
        "train.epochs=1",
        "--quiet",
    ];
    assert_eq!(env.run(&args).code(), 0);
    let before = std::fs::read_to_string(env.path("runs/small/snapshots.jsonl")).unwrap();
    let second = env.run(&args);
    assert_eq!(second.code(), 0, "{}", second.stderr());
    assert!(
        second.stdout().contains("runs/small-2"),
        "{}",
        second.stdout()
    );
    assert_eq!(
        before,
        std::fs::read_to_string(env.path("runs/small/snapshots.jsonl")).unwrap()
    );
    assert_eq!(env.snapshots("runs/small-2").len(), 4);
}

#[test]
fn overrides_and_out_dir_apply() {
    let env = Env::small();
    let run = env.run(&[
        "train",
        "--config",
        "small.toml",
        "--out",
        "elsewhere",
        "--quiet",
        "--set",
        "train.epochs=1",
        "--set",
        "train.batch_size=16",
        "--set",
        "train.accumulation_steps=3",
        "--set",
        "run.name=acc",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let snaps = env.snapshots("elsewhere/acc");
    // 960 samples / 16 = 60 micro-batches, 3 per step.
    assert_eq!(snaps[1]["step"], 20);
    let resolved = std::fs::read_to_string(env.path("elsewhere/acc/config.toml")).unwrap();
    assert!(resolved.contains("accumulation_steps = 3"), "{resolved}");
}

#[test]
fn bad_configs_exit_2_with_one_line_naming_the_problem() {
    let env = Env::new();
    env.write("typo.toml", "[train]\nepochs = 1\nbatch_sise = 4\n");
    env.run(&["train", "--config", "typo.toml"])
        .fails_with_detail(
            2,
            &[
                "typo.toml:3:1:",
                "unknown key train.batch_sise (did you mean train.batch_size?)",
            ],
            &["expected one of epochs, batch_size, "],
        );

    env.write("negative.toml", "[model]\nhidden = [64, -8]\n");
    env.run(&["validate", "--config", "negative.toml"])
        .fails_with(
            2,
            &["negative.toml:2:1:", "model.hidden[1] must be > 0, got -8"],
        );

    env.write(
        "nocsv.toml",
        "[data]\nkind = \"csv\"\npath = \"missing.csv\"\n",
    );
    env.run(&["train", "--config", "nocsv.toml"])
        .fails_with(2, &["nocsv.toml:3:1:", "data.path", "missing.csv"]);

    env.run(&["train", "--config", "absent.toml"])
        .fails_with(2, &["absent.toml", "cannot read config file"]);

    env.write("small.toml", SMALL);
    env.run(&[
        "train",
        "--config",
        "small.toml",
        "--set",
        "train.batch_size=0",
    ])
    .fails_with(
        2,
        &["--set train.batch_size=0: train.batch_size must be > 0, got 0"],
    );
    env.run(&[
        "train",
        "--config",
        "small.toml",
        "--set",
        "train.batch_size",
    ])
    .fails_with(2, &["--set train.batch_size", "expected key=value"]);
    assert!(
        !env.path("runs").exists(),
        "failed validation writes nothing"
    );
}

#[test]
fn cuda_without_a_driver_or_feature_is_a_clean_error() {
    let env = Env::small();
    let run = env.run(&[
        "train",
        "--config",
        "small.toml",
        "--set",
        "device.backend=cuda",
    ]);
    if cfg!(feature = "cuda") {
        run.fails_with(2, &["no CUDA device or driver is available"]);
    } else {
        run.fails_with(
            2,
            &[
                "device.backend = \"cuda\" is not compiled",
                "--features cuda",
            ],
        );
    }
}

#[test]
fn a_diverging_run_keeps_its_snapshots_and_says_why() {
    let env = Env::small();
    let run = env.run(&[
        "train",
        "--config",
        "small.toml",
        "--set",
        "train.optimizer=sgd",
        "--set",
        "train.lr=1e30",
    ]);
    assert_eq!(run.code(), 4, "{}", run.stderr());
    assert!(
        run.stderr().contains("error: training diverged"),
        "{}",
        run.stderr()
    );
    let snaps = env.snapshots("runs/small");
    assert_eq!(snaps[0]["event"], "run_start");
    let summary = env.summary("runs/small");
    assert_eq!(summary["status"], "failed");
    assert!(
        summary["error"].as_str().unwrap().contains("diverged"),
        "{summary}"
    );
}

#[test]
fn help_and_usage_errors() {
    let env = Env::new();
    let help = env.run(&["--help"]);
    assert_eq!(help.code(), 0);
    for word in ["train", "validate", "Exit codes"] {
        assert!(help.stdout().contains(word), "{}", help.stdout());
    }
    let train_help = env.run(&["train", "--help"]);
    assert!(
        train_help.stdout().contains("--set <KEY=VALUE>"),
        "{}",
        train_help.stdout()
    );
    assert_eq!(env.run(&["frobnicate"]).code(), 2);
    assert_eq!(env.run(&["train"]).code(), 2);
}

#[test]
fn every_shipped_config_validates() {
    let configs = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs");
    let mut seen = 0;
    let files = std::fs::read_dir(&configs)
        .unwrap()
        .chain(std::fs::read_dir(configs.join("bench")).unwrap())
        .map(|entry| entry.unwrap().path());
    for path in files {
        if path.extension().is_some_and(|e| e == "toml") {
            let run = Command::new(env!("CARGO_BIN_EXE_tidemark"))
                .args(["validate", "--config"])
                .arg(&path)
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .output()
                .unwrap();
            assert!(
                run.status.success(),
                "{}: {}",
                path.display(),
                String::from_utf8_lossy(&run.stderr)
            );
            // What a run writes as its config.toml loads back to the same config.
            let config = tidemark::config::load(&path, &[]).unwrap();
            let written = tidemark::config::to_toml(&config);
            let again = tidemark::config::parse(&written, "config.toml", &[]);
            assert_eq!(again, Ok(config), "{}:\n{written}", path.display());
            seen += 1;
        }
    }
    assert!(
        seen >= 12,
        "configs/ and configs/bench/ hold 12 configs, {seen} validated"
    );
}

#[test]
fn every_run_draws_memory_svg_and_report_redraws_it() {
    let env = Env::small();
    // A limit the run never reaches, for its line in the picture: four times the peak of the
    // same run without one.
    let free = [
        "train",
        "--config",
        "small.toml",
        "--quiet",
        "--set",
        "run.name=\"free\"",
    ];
    assert_eq!(env.run(&free).code(), 0);
    let limit = 4 * env.summary("runs/free")["peak_bytes_in_use"]
        .as_u64()
        .unwrap();
    let set_limit = format!("memory.limit={limit}");
    let run = env.run(&[
        "train",
        "--config",
        "small.toml",
        "--quiet",
        "--set",
        &set_limit,
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let limit_label = format!("limit {}", tidemark::memory::format_bytes(limit));
    let svg_path = env.path("runs/small/memory.svg");
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    for text in [
        "small: memory per step and epoch (host)",
        "in use",
        "reserved",
        "peak in use",
        &limit_label,
        "cleanup",
    ] {
        assert!(svg.contains(text), "{text} missing from memory.svg");
    }
    std::fs::remove_file(&svg_path).unwrap();
    let report = env.run(&["report", "runs/small"]);
    assert_eq!(report.code(), 0, "{}", report.stderr());
    let out = report.stdout();
    for text in [
        "run small (runs/small): completed",
        "3 epochs, 90 steps",
        "memory cleanup (epoch 3)",
        "growth alarm: none",
        "wrote runs/small/memory.svg",
    ] {
        assert!(out.contains(text), "{text} missing from: {out}");
    }
    assert!(svg_path.is_file(), "report redraws the picture");
    env.run(&["report", "runs/nothing"])
        .fails_with(2, &["runs/nothing: not a run directory"]);
}

/// Records, after every step, which checkpoint `latest` names.
struct LatestSeen {
    run_dir: PathBuf,
    seen: std::sync::Arc<std::sync::Mutex<Vec<(usize, usize, String)>>>,
}

impl tidemark::record::Observer for LatestSeen {
    fn step_done(&mut self, epoch: usize, step: usize) {
        let latest =
            std::fs::read_to_string(self.run_dir.join("checkpoints/latest")).unwrap_or_default();
        self.seen.lock().unwrap().push((epoch, step, latest));
    }
}

#[test]
fn checkpoints_every_n_steps_inside_epochs_keep_only_the_latest() {
    let dir = tempfile::tempdir().unwrap();
    // 960 training samples in steps of 32: 30 steps an epoch.
    let config = tidemark::config::ConfigBuilder::new("every")
        .output_dir(dir.path())
        .synthetic(1200, 16, 4)
        .hidden(&[32])
        .epochs(2)
        .batch_size(32)
        .checkpoint_every_steps(7)
        .build()
        .unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let observer = LatestSeen {
        run_dir: dir.path().join("every"),
        seen: seen.clone(),
    };
    let summary = tidemark::Trainer::new(config)
        .observer(observer)
        .run()
        .unwrap();
    let seen = seen.lock().unwrap();
    let at = |epoch: usize, step: usize| {
        seen.iter()
            .find(|(e, s, _)| (*e, *s) == (epoch, step))
            .map(|(.., latest)| latest.clone())
            .unwrap()
    };
    // step_done comes before that step's checkpoint: step 8 sees step 7's.
    assert_eq!(at(1, 7), "epoch-0");
    assert_eq!(at(1, 8), "step-7");
    assert_eq!(at(1, 29), "step-28");
    // Epoch 1 ends at step 30 with its own checkpoint; step 35 is the 5th of epoch 2.
    assert_eq!(at(2, 1), "epoch-1");
    assert_eq!(at(2, 6), "step-35");
    assert_eq!(at(2, 30), "step-56");
    let checkpoints = summary.run_dir.join("checkpoints");
    assert_eq!(
        std::fs::read_to_string(checkpoints.join("latest")).unwrap(),
        "epoch-2"
    );
    let mut left: Vec<String> = std::fs::read_dir(&checkpoints)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["epoch-2", "latest"], "older checkpoints are deleted");
    let written = std::fs::read_to_string(summary.run_dir.join("config.toml")).unwrap();
    assert!(
        written.contains("[checkpoint]\nevery_steps = 7"),
        "{written}"
    );
}
