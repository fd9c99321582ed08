//! Sweeps and comparisons.

use super::*;

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
        let rows = sweep_runs(&env.path(clear).join("small-sweep"));
        assert_eq!(rows.len(), 3);
        for i in 1..=3 {
            assert!(env
                .path(clear)
                .join(format!("small-sweep/trial-00{i}/summary.json"))
                .is_file());
            // Run i's seed is run.seed + i - 1 (small.toml's is 1).
            let config = env
                .path(clear)
                .join(format!("small-sweep/trial-00{i}/config.toml"));
            let config: toml::Table =
                toml::from_str(&std::fs::read_to_string(config).unwrap()).unwrap();
            assert_eq!(config["run"]["seed"].as_integer(), Some(i), "{config}");
        }
        (run, rows)
    };
    let (run, rows) = sweep("between_runs");
    assert!(
        run.stdout().contains("Every run released its memory."),
        "{}",
        run.stdout()
    );
    // A report of the sweep shows the runs' table too, from the journal.
    let report = env.run(&["report", "between_runs/small-sweep"]);
    assert_eq!(report.code(), 0, "{}", report.stderr());
    let shown = report.stdout();
    assert!(
        shown.contains("| run | final loss | peak in use |"),
        "{shown}"
    );
    assert!(shown.contains("report: 3 trials: 3 completed"), "{shown}");
    for r in &rows {
        let retained = r["retained_bytes_in_use"].as_i64().unwrap().max(0) as f64;
        assert!(retained <= 0.01 * num(r, "peak_bytes_in_use"), "{r}");
    }
    // What the last run leaves held: the process's resident set after it ends. With never,
    // the heap its steps freed stays resident: at least a quarter of the run's own peak (above
    // what the process held at its start) more than with between_runs (measured: 17.9 MB more
    // here, 17.0 MB with an L2 of 8 MiB). The summary's reserved figure on the host cannot
    // show it everywhere: it is never below the bytes in use, and those count gemm's
    // per-thread buffers whole, the size of the L2 cache, of which only the pages gemm touched
    // are resident (with 8 MiB buffers, in use exceeded the anonymous resident set).
    let released = num(&rows[2], "rss_after_bytes");
    let (_, never) = sweep("never");
    let kept = num(&never[2], "rss_after_bytes");
    let last = never[2]["run_dir"].as_str().unwrap();
    let own = num(&never[2], "peak_bytes_in_use") - start_in_use(&env.snapshots(last));
    assert!(
        kept > released + own / 4.0,
        "never keeps freed heap resident: {kept} vs {released} (the run's own peak {own})"
    );
}

#[test]
fn a_sweep_of_30_runs_keeps_nothing_from_run_to_run() {
    let env = Env::small();
    let run = env.run(&[
        "sweep",
        "--config",
        "small.toml",
        "--runs",
        "30",
        "--set",
        "train.epochs=1",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let rows = sweep_runs(&env.path("runs/small-sweep"));
    assert_eq!(rows.len(), 30);
    // Burn's autodiff keeps a dropped graph's bookkeeping until the next backward pass; the
    // release settles it, and a run's own records are taken into the baseline: from run 2 on
    // (run 1 initialises Burn's globals), nothing.
    for r in &rows[1..] {
        assert_eq!(r["retained_bytes_in_use"], 0, "{r}");
    }
    let rss = |i: usize| num(&rows[i], "rss_after_bytes");
    assert!(
        rss(29) <= rss(1) * 1.02,
        "resident set after run 30 ({}) within 2% of after run 2 ({})",
        rss(29),
        rss(1)
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
    // A second comparison of the config goes beside the first, which it does not touch.
    let first = super::outside::tree(&env.path("runs/small-compare"));
    let again = env.run(&[
        "compare",
        "--config",
        "small.toml",
        "--policies",
        "growth",
        "--set",
        "train.epochs=1",
    ]);
    assert_eq!(again.code(), 0, "{}", again.stderr());
    assert_eq!(super::outside::tree(&env.path("runs/small-compare")), first);
    let md = std::fs::read_to_string(env.path("runs/small-compare-2/compare.md")).unwrap();
    assert_eq!(md.lines().count(), 2 + 1, "{md}");
    assert!(
        again.stdout().contains("runs/small-compare-2"),
        "{}",
        again.stdout()
    );
    // No name at all is refused before anything trains.
    let before = super::outside::tree(env.dir.path());
    env.run(&["compare", "--config", "small.toml", "--policies", ","])
        .fails_with(2, &["--policies: no policy named"]);
    assert_eq!(super::outside::tree(env.dir.path()), before);
}
