//! Data sources: CSV, IDX and the shipped digits.

use super::*;

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
    // Shown with `-- --nocapture`; docs/data.md quotes it.
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
fn malformed_csv_exits_2_naming_line_and_column() {
    let env = Env::new();
    env.write("bad.csv", "1,2,0\n3,4,1\n5,oops,0\n");
    env.write("bad.toml", "[data]\nkind = \"csv\"\npath = \"bad.csv\"\n");
    env.run(&["train", "--config", "bad.toml"]).fails_with(
        2,
        &["bad.csv:3: column 2: expected a finite number, got \"oops\""],
    );
}

/// A single-column series with a header, a trend, a 12-step cycle and three gaps.
fn write_series(env: &Env, name: &str) {
    let mut csv = String::from("level\n");
    for t in 0..600 {
        if [40, 41, 300].contains(&t) {
            csv.push('\n');
            continue;
        }
        let cycle = (t as f64 * std::f64::consts::TAU / 12.0).sin();
        let noise = ((t * 7919) % 101) as f64 / 101.0 - 0.5;
        csv.push_str(&format!(
            "{:.3}\n",
            50.0 + 0.05 * t as f64 + 3.0 * cycle + 0.3 * noise
        ));
    }
    env.write(name, &csv);
}

#[test]
fn a_series_never_seen_trains_with_path_column_and_window_only() {
    let env = Env::new();
    write_series(&env, "level.csv");
    env.write(
        "series.toml",
        "[data]\npath = \"level.csv\"\ncolumn = \"level\"\nwindow = 24\n",
    );
    // The default MLP (1024 x 1024) is slow in a debug build; the config file stays three keys.
    let run = env.run(&[
        "train",
        "--config",
        "series.toml",
        "--set",
        "model.hidden=[64]",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert!(
        run.stderr().contains(
            "data: 3 of 600 values of \"level\" are missing; data.gaps = \"interpolate\""
        ),
        "{}",
        run.stderr()
    );
    let summary = env.summary("runs/run");
    assert_eq!(summary["task"], "forecast");
    // 20% of 600 values held out: 120 validation windows of one target.
    assert_eq!(summary["valid_samples"], 120);
    let rmse = num(&summary, "final_val_rmse");
    let trend = summary["baselines"]["linear_trend"]["rmse"]
        .as_f64()
        .unwrap();
    assert!(
        rmse.is_finite() && rmse < trend,
        "model {rmse}, trend {trend}"
    );
    assert!(run.stdout().contains("val rmse"), "{}", run.stdout());

    // No handling of the gaps is an error that names the first one.
    let run = env.run(&[
        "train",
        "--config",
        "series.toml",
        "--set",
        "data.gaps=\"none\"",
    ]);
    run.fails_with(
        2,
        &["level.csv:42: value column \"level\" is missing in 3 rows (first at line 42)"],
    );
    // A window longer than the training part leaves nothing to train on.
    let run = env.run(&[
        "train",
        "--config",
        "series.toml",
        "--set",
        "data.window=500",
    ]);
    assert_eq!(run.code(), 2, "{}", run.stderr());
    // A season longer than the series leaves its baseline nothing to forecast from: it is left
    // out and said, and the run's summary reads back (a NaN error was written as null).
    let season = [
        "train",
        "--config",
        "series.toml",
        "--set",
        "model.hidden=[8]",
        "--set",
        "train.epochs=1",
        "--set",
        "data.season=2300",
        "--set",
        "run.name=\"season\"",
    ];
    let run = env.run(&season);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert!(
        run.stderr().contains(
            "data: the seasonal_naive_2300 baseline has no held-out value to forecast from \
             (data.season = 2300, 480 values before them); it is left out"
        ),
        "{}",
        run.stderr()
    );
    let summary = env.summary("runs/season");
    let names: Vec<&String> = summary["baselines"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["last_value", "linear_trend"]);
    let report = env.run(&["report", "runs/season"]);
    assert_eq!(report.code(), 0, "{}", report.stderr());
}

#[test]
fn an_lstm_gets_advice_without_a_bf16_probe_and_refuses_bf16_compute() {
    let env = Env::new();
    write_series(&env, "level.csv");
    env.write(
        "lstm.toml",
        "[model]\nkind = \"lstm\"\nhidden = [8]\n\
         [data]\npath = \"level.csv\"\ncolumn = \"level\"\nwindow = 12\n\
         [train]\nepochs = 1\nbatch_size = 32\n",
    );
    let run = env.run(&["train", "--config", "lstm.toml"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    // Burn's LSTM cannot step in bf16: the advisor leaves that lever out instead of probing
    // it (a probe that panics lost every lever, and printed the panic).
    assert!(!run.stderr().contains("panicked"), "{}", run.stderr());
    let summary = env.summary("runs/run");
    let levers: Vec<&str> = summary["advice"]["levers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["lever"].as_str().unwrap())
        .collect();
    assert!(
        levers.iter().any(|l| l.starts_with("accumulation")),
        "{levers:?}"
    );
    assert!(!levers.iter().any(|l| l.contains("bf16")), "{levers:?}");
    // Asked for, bf16 compute is refused before the run starts.
    let run = env.run(&[
        "train",
        "--config",
        "lstm.toml",
        "--set",
        "train.precision=\"bf16\"",
        "--out",
        "bf16",
    ]);
    run.fails_with(
        2,
        &["train.precision = \"bf16\" is not supported by this task's model: Burn 0.22's LSTM"],
    );
    assert!(!env.path("bf16").exists());
}
