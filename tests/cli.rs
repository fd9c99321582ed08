//! Runs the real `tidemark` binary in a temporary directory and checks exit codes, stderr and
//! the files it writes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

// The library-level tests below read host memory, as the binary does.
#[global_allocator]
static ALLOC: tidemark::memory::CountingAllocator = tidemark::memory::CountingAllocator::new();

/// A temporary working directory with helpers to write configs and run the CLI in it.
struct Env {
    dir: tempfile::TempDir,
}

/// A small, fast config: finishes in a few seconds even in a debug build.
const SMALL: &str = r#"
[run]
name = "small"
seed = 1

[model]
hidden = [32]

[data]
kind = "synthetic"
samples = 1200
features = 16
classes = 4
noise = 1.5
num_workers = 1

[train]
epochs = 3
batch_size = 32
lr = 0.003
"#;

impl Env {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// A directory holding `small.toml` (the [`SMALL`] config).
    fn small() -> Self {
        let env = Self::new();
        env.write("small.toml", SMALL);
        env
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn write(&self, rel: &str, contents: &str) -> &Self {
        std::fs::write(self.path(rel), contents).unwrap();
        self
    }

    /// `tidemark train --config small.toml --set run.name=NAME`, then `extra`.
    fn train_small(&self, name: &str, extra: &[&str]) -> Run {
        let set_name = format!("run.name={name}");
        let mut args = vec!["train", "--config", "small.toml", "--set", &set_name];
        args.extend_from_slice(extra);
        self.run(&args)
    }

    fn run(&self, args: &[&str]) -> Run {
        let output = Command::new(env!("CARGO_BIN_EXE_tidemark"))
            .args(args)
            .current_dir(self.dir.path())
            .env("RUST_BACKTRACE", "1")
            // Mesa's Vulkan driver complains on stderr when this is unset.
            .env("XDG_RUNTIME_DIR", self.dir.path())
            .output()
            .unwrap();
        Run(output)
    }

    fn snapshots(&self, run_dir: &str) -> Vec<Value> {
        let text = std::fs::read_to_string(self.path(run_dir).join("snapshots.jsonl")).unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn summary(&self, run_dir: &str) -> Value {
        let text = std::fs::read_to_string(self.path(run_dir).join("summary.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }
}

struct Run(Output);

impl Run {
    fn code(&self) -> i32 {
        self.0.status.code().expect("exited normally")
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.0.stderr).into_owned()
    }

    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.0.stdout).into_owned()
    }

    /// Asserts a clean failure: this exit code, exactly one line on stderr containing each of
    /// `needles`, and no panic.
    fn fails_with(&self, code: i32, needles: &[&str]) {
        let stderr = self.stderr();
        assert_eq!(self.code(), code, "stderr: {stderr}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("backtrace"),
            "{stderr}"
        );
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "one line expected: {stderr}"
        );
        for needle in needles {
            assert!(stderr.contains(needle), "{needle:?} not in: {stderr}");
        }
    }
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

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
fn csv_data_trains() {
    let env = Env::new();
    // Two features; the label is which side of x + y = 0 a point is on.
    let mut csv = String::from("x,y,label\n");
    for i in 0..400 {
        let x = ((i * 37) % 101) as f32 / 50.0 - 1.0;
        let y = ((i * 53) % 97) as f32 / 48.0 - 1.0;
        csv.push_str(&format!("{x},{y},{}\n", u8::from(x + y > 0.0)));
    }
    env.write("points.csv", &csv);
    env.write(
        "csv.toml",
        "[run]\nname = \"csv\"\n[model]\nhidden = [16]\n[data]\nkind = \"csv\"\npath = \"points.csv\"\n\
         label_column = \"label\"\nnum_workers = 0\n[train]\nepochs = 8\nbatch_size = 20\nlr = 0.01\n",
    );
    let run = env.run(&["train", "--config", "csv.toml", "--quiet"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let summary = env.summary("runs/csv");
    assert_eq!(summary["train_samples"], 320);
    assert!(num(&summary, "final_val_accuracy") > 0.85, "{summary}");
}

#[test]
fn bad_configs_exit_2_with_one_line_naming_the_problem() {
    let env = Env::new();
    env.write("typo.toml", "[train]\nepochs = 1\nbatch_sise = 4\n");
    env.run(&["train", "--config", "typo.toml"])
        .fails_with(2, &["typo.toml:3:1:", "unknown key train.batch_sise"]);

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

/// Writes `samples` as a CSV with a header, the label in a named middle column, and feature
/// `j` multiplied by 10^(j - 3): scales from 1e-3 to 1e4.
fn write_badly_scaled_csv(env: &Env, name: &str) {
    let samples = tidemark::data::generate(&tidemark::config::SyntheticConfig {
        samples: 1200,
        features: 8,
        classes: 4,
        seed: 5,
        noise: 1.0,
    });
    let mut text = String::from("f0,f1,f2,f3,digit,f4,f5,f6,f7\n");
    for s in &samples {
        let cells: Vec<String> = s
            .features
            .iter()
            .enumerate()
            .map(|(j, x)| format!("{}", x * 10f32.powi(j as i32 - 3)))
            .collect();
        text.push_str(&format!(
            "{},{},{}\n",
            cells[..4].join(","),
            s.label,
            cells[4..].join(",")
        ));
    }
    env.write(name, &text);
}

#[test]
fn a_csv_with_features_on_different_scales_trains_with_only_path_and_label() {
    let env = Env::new();
    write_badly_scaled_csv(&env, "scaled.csv");
    env.write(
        "scaled.toml",
        "[model]\nhidden = [32]\n[data]\nkind = \"csv\"\npath = \"scaled.csv\"\n\
         label_column = \"digit\"\n[train]\nepochs = 8\nbatch_size = 32\n",
    );
    let accuracy = |name: &str, extra: &[&str]| {
        let set_name = format!("run.name={name}");
        let mut args = vec!["train", "--config", "scaled.toml", "--set", &set_name];
        args.extend(extra);
        let run = env.run(&args);
        assert_eq!(run.code(), 0, "{}", run.stderr());
        num(&env.summary(&format!("runs/{name}")), "final_val_accuracy")
    };
    let standardized = accuracy("default", &[]);
    let raw = accuracy("raw", &["--set", "data.standardize=false"]);
    // Shown with `-- --nocapture`; the README quotes it.
    eprintln!(
        "validation accuracy: {:.1}% standardised, {:.1}% without",
        standardized * 100.0,
        raw * 100.0
    );
    assert!(
        standardized >= 0.88,
        "standardised by default: {standardized}"
    );
    assert!(
        standardized > raw + 0.1,
        "standardising matters here: {standardized} against {raw} without"
    );
}

/// An IDX file: magic (two zero bytes, type 0x08, rank), big-endian dimensions, bytes.
fn idx_bytes(dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0, 0x08, dims.len() as u8];
    for d in dims {
        out.extend(d.to_be_bytes());
    }
    out.extend(data);
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

#[test]
fn idx_files_train_and_corrupt_ones_exit_2_with_one_line() {
    let env = Env::new();
    // 300 4x4 images in 3 classes: class c lights up row c, over pixel noise.
    let n = 300;
    let mut images = Vec::new();
    let mut labels = Vec::new();
    for i in 0..n {
        let class = (i % 3) as u8;
        labels.push(class);
        for px in 0..16u32 {
            let noise = ((i as u32 * 7919 + px * 104_729) % 61) as u8;
            images.push(if px / 4 == u32::from(class) {
                180 + noise
            } else {
                noise
            });
        }
    }
    std::fs::write(
        env.path("img.idx.gz"),
        gzip(&idx_bytes(&[n as u32, 4, 4], &images)),
    )
    .unwrap();
    std::fs::write(env.path("lbl.idx"), idx_bytes(&[n as u32], &labels)).unwrap();
    let config = |images: &str, labels: &str| {
        format!(
            "[model]\nhidden = [16]\n[data]\nkind = \"idx\"\nimages = \"{images}\"\n\
             labels = \"{labels}\"\n[train]\nepochs = 3\nbatch_size = 16\nlr = 0.01\n"
        )
    };
    env.write("idx.toml", &config("img.idx.gz", "lbl.idx"));
    let run = env.run(&["train", "--config", "idx.toml"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let summary = env.summary("runs/run");
    assert!(num(&summary, "final_val_accuracy") > 0.9, "{summary}");
    assert_eq!(
        num(&summary, "train_samples") + num(&summary, "valid_samples"),
        300.0
    );

    // A wrong magic number, truncated data, and a label count that does not match.
    std::fs::write(env.path("magic.idx"), b"\x08\x03\x00\x00garbage").unwrap();
    std::fs::write(
        env.path("short.idx"),
        &idx_bytes(&[n as u32, 4, 4], &images)[..100],
    )
    .unwrap();
    std::fs::write(env.path("few.idx"), idx_bytes(&[10], &labels[..10])).unwrap();
    for (name, images, labels, needle) in [
        ("magic", "magic.idx", "lbl.idx", "magic.idx: not an IDX file"),
        (
            "short",
            "short.idx",
            "lbl.idx",
            "short.idx: truncated the data: dimensions [300, 4, 4] need 4800 bytes, the file has 84",
        ),
        ("few", "img.idx.gz", "few.idx", "few.idx: holds 10 labels, but img.idx.gz holds 300 images"),
    ] {
        env.write(&format!("{name}.toml"), &config(images, labels));
        env.run(&["train", "--config", &format!("{name}.toml")])
            .fails_with(2, &[needle]);
    }
}

impl Env {
    /// Trains a shipped digits config (`configs/{config}.toml`, reading `data/digits.csv.gz`
    /// from the repository) with `overrides` (`key=value`).
    fn train_digits(&self, config: &str, overrides: &[&str]) -> Run {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let config = root.join(format!("configs/{config}.toml"));
        let data = format!(
            "data.path=\"{}\"",
            root.join("data/digits.csv.gz").display()
        );
        let mut args = vec![
            "train",
            "--config",
            config.to_str().unwrap(),
            "--set",
            &data,
        ];
        for o in overrides {
            args.extend(["--set", o]);
        }
        self.run(&args)
    }
}

#[test]
fn the_shipped_digits_train_an_mlp_and_a_cnn() {
    let env = Env::new();
    for (config, epochs, at_least) in [("digits-mlp", 10, 0.93), ("digits-cnn", 3, 0.9)] {
        let run = env.train_digits(config, &[&format!("train.epochs={epochs}")]);
        assert_eq!(run.code(), 0, "{}", run.stderr());
        let summary = env.summary(&format!("runs/{config}"));
        assert_eq!(
            num(&summary, "train_samples") + num(&summary, "valid_samples"),
            1797.0
        );
        let accuracy = num(&summary, "final_val_accuracy");
        assert!(
            accuracy >= at_least,
            "{config}: {accuracy} after {epochs} epochs"
        );
    }
    // A CNN whose input shape does not match the data says so before training.
    env.train_digits("digits-cnn", &["model.input=[1,8,7]"])
        .fails_with(
            2,
            &["model.input = [1, 8, 7] is 56 values per sample, but the data has 64 features"],
        );
}

#[test]
fn gradient_checkpointing_keeps_the_losses_and_lowers_the_cnn_peak() {
    let env = Env::new();
    let run = |checkpointing: bool| {
        let name = format!("gc-{checkpointing}");
        let run = env.train_digits(
            "digits-cnn",
            &[
                &format!("run.name={name}"),
                &format!("train.gradient_checkpointing={checkpointing}"),
                "train.epochs=1",
                "train.batch_size=256",
                "model.channels=[32,64]",
            ],
        );
        assert_eq!(run.code(), 0, "{}", run.stderr());
        let epoch = env
            .snapshots(&format!("runs/{name}"))
            .into_iter()
            .find(|s| s["event"] == "epoch")
            .unwrap();
        // What the step adds above what stays between steps: the per-thread matrix buffers
        // of the backend, which one more or one fewer worker thread can move by 1 MiB, are in
        // both figures.
        let above_rest = num(&epoch, "peak_bytes_in_use") - num(&epoch, "bytes_in_use");
        (num(&epoch, "loss"), above_rest)
    };
    let (loss, above) = run(false);
    let (loss_gc, above_gc) = run(true);
    assert!((loss - loss_gc).abs() < 1e-6, "{loss} vs {loss_gc}");
    // Measured in release: 12.11 MiB without, 10.18 MiB with.
    assert!(above_gc < above - (1 << 20) as f64, "{above} -> {above_gc}");
}

#[test]
fn malformed_csv_exits_2_naming_line_and_column() {
    let env = Env::new();
    env.write("bad.csv", "1,2,0\n3,4,1\n5,oops,0\n");
    env.write("bad.toml", "[data]\nkind = \"csv\"\npath = \"bad.csv\"\n");
    env.run(&["train", "--config", "bad.toml"]).fails_with(
        2,
        &["bad.csv:3: column 2: expected a finite number, got \"oops\""],
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
    assert_eq!(run.code(), 1, "{}", run.stderr());
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
fn mixed_precision_tracks_f32_and_records_the_loss_scale() {
    let env = Env::small();
    let accuracy = |precision: &str| {
        let run = env.run(&[
            "train",
            "--config",
            "small.toml",
            "--set",
            &format!("run.name={precision}"),
            "--set",
            &format!("train.precision={precision}"),
        ]);
        assert_eq!(run.code(), 0, "{}", run.stderr());
        let summary = env.summary(&format!("runs/{precision}"));
        assert_eq!(summary["precision"], precision);
        assert_eq!(summary["skipped_steps"], 0);
        num(&summary, "final_val_accuracy")
    };
    let exact = accuracy("f32");
    assert!(exact > 0.8, "the f32 run must learn: {exact}");
    for precision in ["bf16", "f16"] {
        let low = accuracy(precision);
        assert!(
            (low - exact).abs() <= 0.01,
            "{precision}: validation accuracy {low} against f32 {exact}"
        );
    }
    // f16 scales the loss by default; bf16 does not.
    let f16 = env.snapshots("runs/f16");
    for s in f16.iter().filter(|s| s["event"] == "epoch") {
        assert_eq!(s["loss_scale"], 65536.0, "{s}");
        assert_eq!(s["skipped_steps"], 0, "{s}");
    }
    let bf16 = env.snapshots("runs/bf16");
    assert!(bf16.iter().all(|s| s.get("loss_scale").is_none()));
}

#[test]
fn an_overflowing_loss_scale_backs_off_and_training_proceeds() {
    let env = Env::small();
    let initial = 2f64.powi(40);
    let run = env.run(&[
        "train",
        "--config",
        "small.toml",
        "--set",
        "train.precision=f16",
        "--set",
        &format!("train.initial_loss_scale={initial}"),
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let snaps = env.snapshots("runs/small");
    let epochs: Vec<&Value> = snaps.iter().filter(|s| s["event"] == "epoch").collect();
    let skipped = num(epochs[0], "skipped_steps");
    assert!(skipped >= 1.0, "f16 overflows at 2^40: {}", epochs[0]);
    // Each skip halves the scale; no clean run of 2000 steps has doubled it since.
    assert_eq!(
        num(epochs[0], "loss_scale"),
        initial / 2f64.powf(skipped),
        "{}",
        epochs[0]
    );
    for e in &epochs[1..] {
        assert_eq!(num(e, "skipped_steps"), 0.0, "the scale settled: {e}");
    }
    let summary = env.summary("runs/small");
    assert_eq!(num(&summary, "skipped_steps"), skipped);
    // Training went on: the loss fell, and validation (which reads every weight) is finite.
    let losses: Vec<f64> = epochs.iter().map(|e| num(e, "loss")).collect();
    assert!(losses.windows(2).all(|w| w[1] < w[0]), "{losses:?}");
    assert!(num(&summary, "final_val_loss").is_finite(), "{summary}");
    assert!(num(&summary, "final_val_accuracy") > 0.8, "{summary}");
}

#[test]
fn precision_and_execution_settings_are_checked() {
    let env = Env::small();
    env.run(&[
        "train",
        "--config",
        "small.toml",
        "--set",
        "train.precision=\"fp8\"",
    ])
    .fails_with(
        2,
        &["train.precision must be one of \"f32\", \"bf16\", \"f16\", got \"fp8\""],
    );
    env.run(&[
        "train",
        "--config",
        "small.toml",
        "--set",
        "train.loss_scaling=dynamic",
    ])
    .fails_with(
        2,
        &["train.loss_scaling", "needs train.precision = \"f16\""],
    );
    env.run(&[
        "train",
        "--config",
        "small.toml",
        "--set",
        "device.execution=lazy",
    ])
    .fails_with(2, &["device.execution must be one of \"eager\", \"fused\""]);
    // flex has one mode, and says so instead of pretending.
    let run = env.run(&[
        "train",
        "--config",
        "small.toml",
        "--set",
        "device.execution=fused",
        "--set",
        "train.epochs=1",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert!(
        run.stderr().contains("execution: flex has no fused mode"),
        "{}",
        run.stderr()
    );
    assert_eq!(env.summary("runs/small")["execution"], "eager");
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
            seen += 1;
        }
    }
    assert!(
        seen >= 11,
        "configs/ and configs/bench/ hold 11 configs, {seen} validated"
    );
}

#[test]
fn accumulation_lowers_the_peak_where_activations_dominate() {
    // A narrow model with a large batch: activations (batch x width) dwarf the weights
    // (width x width), so four micro-batches of 512 need far less than one batch of 2048.
    let env = Env::small();
    let peak = |batch: &str, steps: &str| {
        let name = format!("run.name=b{batch}x{steps}");
        let run = env.run(&[
            "train",
            "--config",
            "small.toml",
            "--quiet",
            "--set",
            &name,
            "--set",
            "data.samples=4100",
            "--set",
            "data.num_workers=0",
            "--set",
            "train.epochs=1",
            "--set",
            "model.hidden=[256, 256, 256]",
            "--set",
            &format!("train.batch_size={batch}"),
            "--set",
            &format!("train.accumulation_steps={steps}"),
        ]);
        assert_eq!(run.code(), 0, "{}", run.stderr());
        let snaps = env.snapshots(&format!("runs/b{batch}x{steps}"));
        num(&snaps[1], "peak_bytes_in_use")
    };
    let large = peak("2048", "1");
    let accumulated = peak("512", "4");
    assert!(
        accumulated < 0.75 * large,
        "accumulated peak {accumulated} should be well under the large-batch peak {large}"
    );
}

#[test]
fn accumulation_through_the_cli_follows_the_large_batch_run() {
    // Same samples in the same order, grouped 4 x 64 or 1 x 256: every update is the same, so
    // the epoch's mean training loss and the validation results agree.
    let env = Env::small();
    let run = |name: &str, batch: &str, steps: &str| {
        let run = env.run(&[
            "train",
            "--config",
            "small.toml",
            "--quiet",
            "--set",
            &format!("run.name={name}"),
            "--set",
            "data.num_workers=0",
            "--set",
            "train.epochs=2",
            "--set",
            &format!("train.batch_size={batch}"),
            "--set",
            &format!("train.accumulation_steps={steps}"),
        ]);
        assert_eq!(run.code(), 0, "{}", run.stderr());
        env.snapshots(&format!("runs/{name}"))
    };
    let large = run("large", "256", "1");
    let accumulated = run("accumulated", "64", "4");
    for epoch in [1, 2] {
        let (a, b) = (&large[epoch], &accumulated[epoch]);
        assert_eq!(a["step"], b["step"]);
        for key in ["loss", "val_loss", "val_accuracy"] {
            let (x, y) = (num(a, key), num(b, key));
            assert!(
                (x - y).abs() <= 1e-4 * x.abs().max(1e-3),
                "epoch {epoch} {key}: {x} vs {y}"
            );
        }
    }
}

/// Epoch peak and epoch losses of a run of SMALL, reshaped so that activations dominate.
fn wide_batch_run(env: &Env, name: &str, extra: &[&str]) -> (Run, Vec<Value>) {
    let mut args = vec![
        "--quiet",
        "--set",
        "data.samples=3000",
        "--set",
        "train.epochs=2",
        "--set",
        "model.hidden=[256, 256, 256]",
        "--set",
        "train.batch_size=1200",
    ];
    args.extend_from_slice(extra);
    let run = env.train_small(name, &args);
    let snaps = env.snapshots(&format!("runs/{name}"));
    (run, snaps)
}

fn epoch_peak(snaps: &[Value]) -> f64 {
    snaps
        .iter()
        .filter(|s| s["event"] == "epoch")
        .map(|s| num(s, "peak_bytes_in_use"))
        .fold(0.0, f64::max)
}

fn epoch_losses(snaps: &[Value]) -> Vec<f64> {
    snaps
        .iter()
        .filter(|s| s["event"] == "epoch")
        .map(|s| num(s, "loss"))
        .collect()
}

/// The run's peak, from its summary (it includes the checkpoints, which epoch peaks do not).
fn run_peak(env: &Env, run_dir: &str) -> f64 {
    num(&env.summary(run_dir), "peak_bytes_in_use")
}

#[test]
fn a_checkpoint_over_the_limit_fails_after_it_is_complete() {
    // Parameters spread over three 4 MiB matrices and a small batch: writing Adam's state
    // (two copies of the parameters at once) holds more than any step.
    let env = Env::small();
    let run = |name: &str, extra: &[&str]| {
        let mut args = vec![
            "--quiet",
            "--set",
            "model.hidden=[1024, 1024, 1024]",
            "--set",
            "data.samples=400",
            "--set",
            "train.epochs=1",
        ];
        args.extend_from_slice(extra);
        env.train_small(name, &args)
    };
    let free = run("free", &[]);
    assert_eq!(free.code(), 0, "{}", free.stderr());
    let (steps, whole) = (
        epoch_peak(&env.snapshots("runs/free")),
        run_peak(&env, "runs/free"),
    );
    assert!(
        whole > steps + 4.0 * 1048576.0,
        "the checkpoint is the run's peak: {whole} against {steps} in the epoch"
    );
    let limit = format!("memory.limit={}", ((steps + whole) / 2.0) as u64);
    let over = run(
        "over",
        &["--set", &limit, "--set", "memory.on_limit=\"shrink\""],
    );
    over.fails_with(
        3,
        &[
            "error: memory limit",
            "peak in use (host) while writing the checkpoint of epoch 1",
            "the checkpoint is complete on disk",
        ],
    );
    assert_eq!(
        std::fs::read_to_string(env.path("runs/over/checkpoints/latest")).unwrap(),
        "epoch-1"
    );
    for file in ["model.bpk", "optimizer.bpk", "meta.json"] {
        assert!(env
            .path(&format!("runs/over/checkpoints/epoch-1/{file}"))
            .is_file());
    }
    let snaps = env.snapshots("runs/over");
    let actions: Vec<&str> = snaps.iter().filter_map(|s| s["action"].as_str()).collect();
    assert_eq!(
        actions,
        ["limit", "cleanup"],
        "no shrink (a checkpoint does not depend on the micro-batch), then the release"
    );
    assert_eq!(snaps.last().unwrap()["event"], "run_end");
    assert_eq!(env.summary("runs/over")["status"], "failed");
}

#[test]
fn memory_limit_fails_with_exit_3_or_shrinks_to_the_same_effective_batch() {
    let env = Env::small();
    // Measure first, so the limit sits between the two layouts on any machine.
    let (_, full) = wide_batch_run(&env, "full", &[]);
    let (_, halved) = wide_batch_run(
        &env,
        "halved",
        &[
            "--set",
            "train.batch_size=600",
            "--set",
            "train.accumulation_steps=2",
        ],
    );
    let (p_full, p_halved) = (epoch_peak(&full), epoch_peak(&halved));
    assert!(
        p_halved < 0.8 * p_full,
        "halving the micro-batch must lower the peak: {p_halved} vs {p_full}"
    );
    let limit = format!("memory.limit={}", ((p_full + p_halved) / 2.0) as u64);

    let (run, snaps) = wide_batch_run(&env, "fail", &["--set", &limit]);
    run.fails_with(
        3,
        &[
            "error: memory limit",
            "exceeded",
            "peak in use (host) at step 1 of epoch 1",
            "(micro-batch 1200, accumulation_steps 1)",
            "try train.batch_size = 600 with train.accumulation_steps = 2",
        ],
    );
    let limit_event = snaps
        .iter()
        .find(|s| s["event"] == "memory_action" && s["action"] == "limit");
    assert!(limit_event.is_some(), "the breach is recorded: {snaps:?}");
    assert_eq!(
        snaps.last().unwrap()["event"],
        "run_end",
        "snapshots are complete after a failure"
    );
    assert_eq!(
        std::fs::read_to_string(env.path("runs/fail/checkpoints/latest")).unwrap(),
        "epoch-0"
    );
    assert!(env
        .path("runs/fail/checkpoints/epoch-0/model.bpk")
        .is_file());
    assert!(env
        .path("runs/fail/checkpoints/epoch-0/optimizer.bpk")
        .is_file());
    let summary = env.summary("runs/fail");
    assert_eq!(summary["status"], "failed");
    assert!(
        summary["error"]
            .as_str()
            .unwrap()
            .starts_with("memory limit"),
        "{summary}"
    );

    let (run, snaps) = wide_batch_run(
        &env,
        "shrink",
        &["--set", &limit, "--set", "memory.on_limit=shrink"],
    );
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let shrinks: Vec<&Value> = snaps.iter().filter(|s| s["action"] == "shrink").collect();
    assert_eq!(shrinks.len(), 1, "one halving suffices: {shrinks:?}");
    assert_eq!(
        (
            shrinks[0]["micro_batch"].as_u64(),
            shrinks[0]["accumulation_steps"].as_u64()
        ),
        (Some(600), Some(2))
    );
    let last = snaps.iter().rfind(|s| s["event"] == "epoch").unwrap();
    assert_eq!(
        (
            last["micro_batch"].as_u64(),
            last["accumulation_steps"].as_u64()
        ),
        (Some(600), Some(2))
    );
    // 2400 training samples, effective batch 1200: 2 optimizer steps per epoch, as unshrunk.
    assert_eq!(last["step"], 4);
    for (a, b) in epoch_losses(&snaps).iter().zip(epoch_losses(&halved)) {
        assert!(
            (a - b).abs() <= 1e-4 * b.abs(),
            "shrunk run follows the 600 x 2 run: {a} vs {b}"
        );
    }
    let summary = env.summary("runs/shrink");
    assert_eq!(
        (
            summary["micro_batch"].as_u64(),
            summary["accumulation_steps"].as_u64()
        ),
        (Some(600), Some(2))
    );
}

#[test]
fn a_limit_below_the_resting_footprint_fails_before_the_first_step() {
    let env = Env::small();
    let run = env.run(&[
        "train",
        "--config",
        "small.toml",
        "--quiet",
        "--set",
        "memory.limit=\"1MiB\"",
    ]);
    run.fails_with(
        3,
        &[
            "memory limit 1.0 MiB exceeded",
            "needed at rest (estimated) before training",
            "parameters, gradients and optimizer state alone exceed it",
        ],
    );
    let snaps = env.snapshots("runs/small");
    assert!(
        snaps.iter().all(|s| s["event"] != "epoch"),
        "no step was taken"
    );
}

#[test]
fn preallocate_on_flex_holds_heap_from_run_start_and_refuses_fractions() {
    let env = Env::small();
    let run = |name: &str, extra: &[&str]| {
        // Wide enough that Adam's moments alone are over 2 MiB.
        let mut args = vec!["--set", "model.hidden=[512,512]", "--set", "train.epochs=2"];
        args.extend(extra);
        let run = env.train_small(name, &args);
        assert_eq!(run.code(), 0, "{}", run.stderr());
    };
    run("growth", &[]);
    run(
        "pre",
        &[
            "--set",
            "memory.policy=preallocate",
            "--set",
            "memory.preallocate=\"64MiB\"",
        ],
    );
    let reserved = |dir: &str, event: &str| -> Vec<f64> {
        env.snapshots(dir)
            .iter()
            .filter(|s| s["event"] == event)
            .map(|s| num(s, "bytes_reserved"))
            .collect()
    };
    let growth_start = reserved("runs/growth", "run_start")[0];
    let growth_most = reserved("runs/growth", "epoch")
        .into_iter()
        .fold(0.0, f64::max);
    assert!(
        growth_most > growth_start + (1 << 20) as f64,
        "growth takes memory as it goes: {growth_start} -> {growth_most}"
    );
    let start = reserved("runs/pre", "run_start")[0];
    assert!(
        start >= (64 << 20) as f64 * 0.98,
        "run_start shows the 64 MiB reservation: {start} (growth started at {growth_start})"
    );
    // Training reuses the reserved heap: reserved stays within 1% of the reservation (a few
    // pages of thread stacks), where growth rose by megabytes.
    for epoch in reserved("runs/pre", "epoch") {
        assert!(
            epoch <= start + (64 << 20) as f64 * 0.01,
            "reserved rose from {start} to {epoch}"
        );
    }
    let snaps = env.snapshots("runs/pre");
    let reserve = snaps.iter().find(|s| s["action"] == "reserve").unwrap();
    assert!(
        reserve["detail"]
            .as_str()
            .unwrap()
            .starts_with("reserved 64.0 MiB of heap: anonymous resident memory"),
        "{reserve}"
    );
    // `between_runs` gives it back.
    let end = reserved("runs/pre", "run_end")[0];
    assert!(
        end < start - (48 << 20) as f64,
        "released: {start} -> {end}"
    );

    env.run(&[
        "train",
        "--config",
        "small.toml",
        "--set",
        "memory.policy=preallocate",
    ])
    .fails_with(
        2,
        &["memory.preallocate = 0.75 is a fraction of device memory, and flex has none"],
    );
}

#[test]
fn sweep_gives_memory_back_between_runs_and_shows_it_kept_with_never() {
    let env = Env::small();
    let sweep = |clear: &str| {
        let run = env.run(&[
            "sweep",
            "--config",
            "small.toml",
            "--runs",
            "3",
            "--out",
            clear,
            "--set",
            &format!("memory.clear={clear}"),
            "--set",
            "train.epochs=1",
            "--set",
            "model.hidden=[256, 256]",
            "--set",
            "data.samples=2000",
            "--set",
            "train.batch_size=500",
        ]);
        assert_eq!(run.code(), 0, "{}", run.stderr());
        assert!(
            run.stdout().contains("| run | final loss | peak in use |"),
            "{}",
            run.stdout()
        );
        let text = std::fs::read_to_string(env.path(clear).join("small-sweep/sweep.json")).unwrap();
        let rows: Vec<Value> = serde_json::from_str(&text).unwrap();
        assert_eq!(rows.len(), 3);
        for i in 1..=3 {
            assert!(env
                .path(clear)
                .join(format!("small-sweep/run-0{i}/summary.json"))
                .is_file());
        }
        (run, rows)
    };
    let (run, rows) = sweep("between_runs");
    assert!(
        run.stdout().contains("Every run released its memory."),
        "{}",
        run.stdout()
    );
    for r in &rows {
        let retained = r["retained_bytes_in_use"].as_i64().unwrap().max(0) as f64;
        assert!(retained <= 0.01 * num(r, "peak_bytes_in_use"), "{r}");
    }
    // What the last run leaves held: anonymous resident memory after it ends (the process's
    // whole resident set also moves with code paged in, by about a MiB between machines).
    // Measured: 3.0 MiB with between_runs, 9.4-11.1 MiB with never.
    let released = num(&rows[2], "reserved_at_end");
    let (_, never) = sweep("never");
    let kept = num(&never[2], "reserved_at_end");
    assert!(
        kept > released + (3 << 20) as f64,
        "never keeps freed heap resident: {kept} vs {released}"
    );
}

/// The memory layer against real CubeCL pools: wgpu, on Mesa's software Vulkan driver
/// (lavapipe) where there is no GPU. Built with `cargo test --features wgpu`.
///
/// Without a wgpu adapter each test prints why it was skipped and returns; with
/// `TIDEMARK_REQUIRE_WGPU=1` (as in CI) a missing adapter fails the test instead.
#[cfg(feature = "wgpu")]
mod wgpu {
    use super::*;
    use tidemark::config::{Backend, DeviceConfig};

    fn adapter_or_skip(test: &str) -> bool {
        match tidemark::backend::select(&DeviceConfig {
            backend: Backend::Wgpu,
            index: 0,
            execution: None,
        }) {
            Ok(_) => true,
            Err(e) if std::env::var_os("TIDEMARK_REQUIRE_WGPU").is_some() => {
                panic!("{test}: TIDEMARK_REQUIRE_WGPU is set but no wgpu adapter is available: {e}")
            }
            Err(e) => {
                eprintln!("skipped {test}: {e}");
                false
            }
        }
    }

    const POOL: &str = r#"
[run]
name = "pool"

[device]
backend = "wgpu"

[model]
hidden = [256, 256]

[data]
kind = "synthetic"
samples = 1024
features = 64
classes = 4

[train]
epochs = 1
batch_size = 128
"#;

    fn pool_run(env: &Env, name: &str, extra: &[&str]) -> (Run, Vec<Value>) {
        let name_set = format!("run.name={name}");
        let mut args = vec![
            "train",
            "--config",
            "pool.toml",
            "--quiet",
            "--set",
            name_set.as_str(),
        ];
        args.extend_from_slice(extra);
        let run = env.run(&args);
        let snaps = env.snapshots(&format!("runs/{name}"));
        (run, snaps)
    }

    fn event<'a>(snaps: &'a [Value], event: &str) -> &'a Value {
        snaps
            .iter()
            .find(|s| s["event"] == event)
            .unwrap_or_else(|| panic!("no {event} in {snaps:?}"))
    }

    #[test]
    fn growth_reserves_with_need_and_preallocation_holds() {
        if !adapter_or_skip("growth_reserves_with_need_and_preallocation_holds") {
            return;
        }
        let env = Env::new();
        env.write("pool.toml", POOL);
        let (run, growth) = pool_run(&env, "growth", &[]);
        assert_eq!(run.code(), 0, "{}", run.stderr());
        let (start, epoch) = (event(&growth, "run_start"), event(&growth, "epoch"));
        assert_eq!(epoch["source"], "cubecl-pool");
        let grew = num(epoch, "bytes_reserved") - num(start, "bytes_reserved");
        assert!(
            grew > (4 << 20) as f64,
            "growth: reserved rises with the first steps by {grew}"
        );

        let (run, pre) = pool_run(
            &env,
            "pre",
            &[
                "--set",
                "memory.policy=preallocate",
                "--set",
                "memory.preallocate=\"64MiB\"",
                "--set",
                "train.epochs=2",
            ],
        );
        assert_eq!(run.code(), 0, "{}", run.stderr());
        let reserve = pre
            .iter()
            .find(|s| s["action"] == "reserve")
            .expect("a reserve event");
        assert!(
            reserve["detail"]
                .as_str()
                .unwrap()
                .starts_with("reserved 64.0 MiB"),
            "{reserve}"
        );
        let start = event(&pre, "run_start");
        assert!(
            num(start, "bytes_reserved") >= (64 << 20) as f64,
            "run_start shows the reservation: {start}"
        );
        // Training is served from the reserved pages and the filled launch-metadata cache:
        // reserved does not rise at all (docs/cubecl-memory.md).
        let most = pre
            .iter()
            .filter(|s| s["event"] == "epoch")
            .map(|s| num(s, "bytes_reserved"))
            .fold(0.0, f64::max);
        assert!(
            most <= num(start, "bytes_reserved"),
            "preallocated: reserved rose from {} to {most} (growth rose by {grew})",
            num(start, "bytes_reserved")
        );
    }

    #[test]
    fn half_precision_runs_where_the_device_has_it_and_is_refused_where_not() {
        if !adapter_or_skip("half_precision_runs_where_the_device_has_it_and_is_refused_where_not")
        {
            return;
        }
        let env = Env::new();
        env.write("pool.toml", POOL);
        for precision in ["f16", "bf16"] {
            let run = env.run(&[
                "train",
                "--config",
                "pool.toml",
                "--set",
                &format!("run.name={precision}"),
                "--set",
                &format!("train.precision={precision}"),
            ]);
            if run.code() == 2 {
                // Lavapipe has f16 but not bf16; a GPU may have both.
                run.fails_with(
                    2,
                    &[&format!(
                        "train.precision = \"{precision}\" is not supported by the wgpu device"
                    )],
                );
                assert!(!env.path(&format!("runs/{precision}")).exists());
                continue;
            }
            assert_eq!(run.code(), 0, "{}", run.stderr());
            let summary = env.summary(&format!("runs/{precision}"));
            assert_eq!(summary["precision"], precision);
            assert!(num(&summary, "final_val_accuracy") > 0.5, "{summary}");
        }
        assert!(
            env.path("runs/f16").exists(),
            "every Vulkan device tidemark targets computes in f16"
        );
    }

    /// Burn 0.22 picks fusion when it is built, so the two execution modes are two binaries:
    /// this one (eager) and one built with `--features wgpu,fused`, named by
    /// `TIDEMARK_FUSED_BIN` (CI builds it; `TIDEMARK_REQUIRE_FUSED=1` makes its absence a
    /// failure). The same run in both must agree epoch by epoch.
    #[test]
    fn eager_and_fused_execution_agree() {
        if !adapter_or_skip("eager_and_fused_execution_agree") {
            return;
        }
        let Some(fused) = std::env::var_os("TIDEMARK_FUSED_BIN") else {
            assert!(
                std::env::var_os("TIDEMARK_REQUIRE_FUSED").is_none(),
                "TIDEMARK_REQUIRE_FUSED is set but TIDEMARK_FUSED_BIN is not"
            );
            eprintln!(
                "eager_and_fused_execution_agree: skipped (set TIDEMARK_FUSED_BIN to a build \
                 with --features wgpu,fused)"
            );
            return;
        };
        let env = Env::new();
        env.write("pool.toml", POOL);
        let args = |mode: &str| {
            vec![
                "train".to_string(),
                "--config".into(),
                "pool.toml".into(),
                "--set".into(),
                format!("run.name={mode}"),
                "--set".into(),
                format!("device.execution={mode}"),
                "--set".into(),
                "train.epochs=2".into(),
            ]
        };
        let eager = env.run(&args("eager").iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(eager.code(), 0, "{}", eager.stderr());
        let run = Command::new(&fused)
            .args(args("fused"))
            .current_dir(env.path(""))
            .env("XDG_RUNTIME_DIR", env.path(""))
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert_eq!(env.summary("runs/eager")["execution"], "eager");
        assert_eq!(env.summary("runs/fused")["execution"], "fused");
        let epochs = |dir: &str| -> Vec<Value> {
            env.snapshots(dir)
                .into_iter()
                .filter(|s| s["event"] == "epoch")
                .collect()
        };
        let (e, f) = (epochs("runs/eager"), epochs("runs/fused"));
        assert_eq!(e.len(), 2);
        assert_eq!(e.len(), f.len());
        for (a, b) in e.iter().zip(&f) {
            for key in ["loss", "val_loss", "val_accuracy"] {
                let (x, y) = (num(a, key), num(b, key));
                assert!(
                    (x - y).abs() <= 1e-4 * x.abs().max(1.0),
                    "epoch {}: {key} eager {x} vs fused {y}",
                    a["epoch"]
                );
            }
        }
    }

    #[test]
    fn limit_trips_on_pool_figures() {
        if !adapter_or_skip("limit_trips_on_pool_figures") {
            return;
        }
        let env = Env::new();
        env.write("pool.toml", POOL);
        let (_, growth) = pool_run(&env, "growth", &[]);
        let (start, epoch) = (event(&growth, "run_start"), event(&growth, "epoch"));
        let limit = ((num(start, "bytes_reserved").max(num(start, "bytes_in_use") * 4.0)
            + num(epoch, "bytes_reserved"))
            / 2.0) as u64;
        let (run, snaps) = pool_run(
            &env,
            "limited",
            &["--set", &format!("memory.limit={limit}")],
        );
        run.fails_with(
            3,
            &["memory limit", "reserved in the device pools", "of epoch 1"],
        );
        assert!(snaps.iter().any(|s| s["action"] == "limit"));
    }

    #[test]
    fn between_runs_returns_the_pools_to_baseline_and_never_keeps_them() {
        if !adapter_or_skip("between_runs_returns_the_pools_to_baseline_and_never_keeps_them") {
            return;
        }
        let env = Env::new();
        env.write("pool.toml", POOL);
        let rows = |clear: &str| {
            let run = env.run(&[
                "sweep",
                "--config",
                "pool.toml",
                "--runs",
                "2",
                "--out",
                clear,
                "--set",
                &format!("memory.clear={clear}"),
            ]);
            assert_eq!(run.code(), 0, "{}", run.stderr());
            let text =
                std::fs::read_to_string(env.path(clear).join("pool-sweep/sweep.json")).unwrap();
            serde_json::from_str::<Vec<Value>>(&text).unwrap()
        };
        let cleared = rows("between_runs");
        // Device memory goes back exactly, from run 1 on: the warm-up has made the one-time
        // state, and wgpu's staging buffers (host memory) are not counted.
        for r in &cleared {
            assert!(r["retained_bytes_in_use"].as_i64().unwrap() <= 0, "{r}");
            assert!(r["retained_bytes_reserved"].as_i64().unwrap() <= 0, "{r}");
        }
        let kept = rows("never");
        let peak_reserved = num(&kept[1], "reserved_at_end");
        assert!(
            peak_reserved > num(&cleared[1], "reserved_at_end") + (4 << 20) as f64,
            "never keeps the pages: {} vs {}",
            peak_reserved,
            num(&cleared[1], "reserved_at_end")
        );
    }
}

#[test]
fn every_run_draws_memory_svg_and_report_redraws_it() {
    let env = Env::small();
    let run = env.run(&[
        "train",
        "--config",
        "small.toml",
        "--quiet",
        "--set",
        "memory.limit=\"1GiB\"",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let svg_path = env.path("runs/small/memory.svg");
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    for text in [
        "small: memory per epoch (host)",
        "in use",
        "reserved",
        "peak in use",
        "limit 1024.0 MiB",
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
        .fails_with(1, &["runs/nothing/snapshots.jsonl"]);
}

/// A user callback that keeps 4 MiB alive per epoch, like a loop that keeps every epoch's
/// outputs in a list.
#[derive(Default)]
struct Leaky {
    kept: Vec<Vec<u8>>,
    messages: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl tidemark::train::Observer for Leaky {
    fn message(&mut self, text: &str) {
        self.messages.lock().unwrap().push(text.to_string());
    }
    fn warning(&mut self, warning: &tidemark::train::Warning) {
        self.messages
            .lock()
            .unwrap()
            .push(format!("warning: {warning}"));
    }
    fn snapshot(&mut self, s: &tidemark::report::Snapshot) {
        if s.event == tidemark::report::Event::Epoch {
            self.kept.push(std::hint::black_box(vec![1u8; 4 << 20]));
        }
    }
}

#[test]
fn the_growth_alarm_catches_a_leak_after_epoch_two() {
    let dir = tempfile::tempdir().unwrap();
    let config = |name: &str| {
        tidemark::config::ConfigBuilder::new(name)
            .output_dir(dir.path())
            .synthetic(1200, 16, 4)
            .hidden(&[32])
            .epochs(4)
            .batch_size(32)
            .build()
            .unwrap()
    };
    let leaky = Leaky::default();
    let messages = leaky.messages.clone();
    let summary = tidemark::Trainer::new(config("leaky"))
        .observer(leaky)
        .run()
        .unwrap();
    let alarm = summary.growth_alarm.expect("the leak is caught");
    assert_eq!(alarm.epoch, 2, "caught after epoch 2");
    let slope = alarm.slope_bytes_per_epoch / (4 << 20) as f64;
    assert!(
        (0.9..1.1).contains(&slope),
        "slope {} bytes/epoch for a 4 MiB/epoch leak",
        alarm.slope_bytes_per_epoch
    );
    assert!(
        messages.lock().unwrap().iter().any(|m| m.starts_with(
            "warning: memory in use grew every epoch: about 4.0 MiB per epoch after epoch 2"
        )),
        "{:?}",
        messages.lock().unwrap()
    );
    let written: Value =
        serde_json::from_slice(&std::fs::read(summary.run_dir.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(written["growth_alarm"]["epoch"], 2);

    let clean = tidemark::Trainer::new(config("clean")).run().unwrap();
    assert_eq!(
        clean.growth_alarm, None,
        "a run without a leak raises nothing"
    );
}

#[test]
fn compare_writes_table_json_and_chart_for_each_policy() {
    let env = Env::small();
    let run = env.run(&[
        "compare",
        "--config",
        "small.toml",
        "--policies",
        "growth,preallocate,limit",
        "--set",
        "train.epochs=2",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let dir = env.path("runs/small-compare");
    let md = std::fs::read_to_string(dir.join("compare.md")).unwrap();
    assert!(
        md.starts_with("| policy | samples/s | peak in use | peak reserved | fragmentation |"),
        "{md}"
    );
    assert_eq!(
        md.lines().count(),
        2 + 3,
        "header and one row per policy: {md}"
    );
    assert!(md.contains("| preallocate |"), "{md}");
    let rows: Vec<Value> =
        serde_json::from_slice(&std::fs::read(dir.join("compare.json")).unwrap()).unwrap();
    let by = |p: &str| rows.iter().find(|r| r["policy"] == p).unwrap().clone();
    let (growth, pre, limit) = (by("growth"), by("preallocate"), by("limit"));
    for row in [&growth, &pre, &limit] {
        assert_eq!(row["status"], "completed", "{row}");
    }
    // Without a size in the config, the reservation is 125% of what growth reserved, so the
    // preallocated run's reserved peak is above growth's.
    assert!(
        num(&pre, "peak_bytes_reserved") > num(&growth, "peak_bytes_reserved"),
        "{pre} vs {growth}"
    );
    // Without a limit in the config, "limit" is 125% of the growth run's peak: a limit that fits.
    let expected = (num(&growth, "peak_bytes_in_use") * 1.25) as u64;
    assert_eq!(limit["limit_bytes"].as_u64(), Some(expected));
    let svg = std::fs::read_to_string(dir.join("compare.svg")).unwrap();
    for text in [
        "growth",
        "preallocate",
        "limit: limit",
        "small: memory per epoch by policy (host",
    ] {
        assert!(svg.contains(text), "{text} missing from compare.svg");
    }
    assert!(
        run.stdout().contains("| growth |"),
        "the table is printed: {}",
        run.stdout()
    );
    env.run(&[
        "compare",
        "--config",
        "small.toml",
        "--policies",
        "growth,turbo",
    ])
    .fails_with(2, &["--policies: unknown policy \"turbo\""]);
}
