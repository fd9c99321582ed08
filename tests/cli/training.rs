//! Training: precision, loss scaling, accumulation, gradient checkpointing.

use super::*;

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
    // Checkpointing recomputes the first block in the backward pass instead of keeping its
    // activations: among them the first convolution's output, 256 x 32 channels x 8 x 8 f32
    // values (2 MiB). At least half of that must go (one release build measured 12.11 MiB
    // without and 10.18 MiB with; the figures themselves differ between CPUs).
    let first_conv_output = (256 * 32 * 8 * 8 * 4) as f64;
    assert!(
        above_gc < above - first_conv_output / 2.0,
        "{above} -> {above_gc}"
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
    // Measured from one micro-batch's own peak: what every run holds besides (the process's
    // state, gemm's buffers, a buffer per rayon worker the size of the L2 cache: 24 MiB with
    // three workers on an 8 MiB L2) is in all three.
    let micro = peak("512", "1");
    assert!(
        accumulated - micro < 0.25 * (large - micro),
        "four micro-batches of 512 should hold about one's peak ({micro}), far under one batch \
         of 2048's ({large}): {accumulated}"
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
