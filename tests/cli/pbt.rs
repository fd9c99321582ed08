//! Population based training (`method = "pbt"`, issue 54): at every interval the worst member
//! copies the best one's checkpoint and goes on with its rate perturbed, and an exploit goes on
//! to the bit as the copied member resumed with the new rate; the same population in parallel
//! under leases, and killed anywhere and resumed, ends with the same lineage and values.

use serde_json::Value;

use super::kill_anywhere::{kill_everywhere, outcome, same, MOMENTS};
use super::{Env, SMALL};

/// Four members of four epochs, deciding after epochs 1, 2 and 3; on the training thread
/// (`num_workers = 0`), so that a run is reproduced to the bit. `extra`: more `[sweep]` keys.
pub(super) fn population(env: &Env, extra: &str) {
    let base = SMALL
        .replace("samples = 1200", "samples = 600")
        .replace("num_workers = 1", "num_workers = 0")
        .replace("epochs = 3", "epochs = 4");
    env.write("base.toml", &base);
    let text = format!(
        "{base}\n[sweep]\nmethod = \"pbt\"\nseed = 3\n{extra}\n[sweep.pbt]\npopulation = 4\n\
         [sweep.vary]\ntrain.lr = {{ min = 1e-4, max = 1e-1, log = true }}\n"
    );
    env.write("search.toml", &text);
}

/// The rows of the `sweep.json` in `dir`, by trial number.
fn rows(env: &Env, dir: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(env.path(dir).join("sweep.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    let mut rows = json["trials"].as_array().unwrap().clone();
    rows.sort_by_key(|r| r["trial"].as_u64());
    rows
}

fn lr(values: &Value) -> f64 {
    values["train.lr"].as_f64().unwrap()
}

#[test]
fn the_worst_member_copies_the_best_and_goes_on_as_the_best_resumed_at_the_new_rate() {
    let env = Env::new();
    population(&env, "");
    let run = env.run(&["sweep", "--config", "search.toml"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let rows = rows(&env, "runs/small-sweep");
    assert_eq!(rows.len(), 4);
    let mut perturbed = 0;
    for epoch in 1..=3 {
        // Each member at the interval: its value there, and whether it copied.
        let at: Vec<(u64, f64, &Value)> = (rows.iter())
            .map(|r| {
                assert_eq!(r["status"], "completed", "{r}");
                let interval = &r["lineage"][epoch - 1];
                assert_eq!(interval["epoch"], epoch as u64, "{r}");
                (
                    r["trial"].as_u64().unwrap(),
                    interval["value"].as_f64().unwrap(),
                    interval,
                )
            })
            .collect();
        let best = at.iter().min_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
        let worst = at.iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
        // A quarter of four, rounded up: one copies, the worst, and it copies the best.
        let copiers: Vec<u64> = (at.iter())
            .filter(|(_, _, i)| !i["copied"].is_null())
            .map(|(n, ..)| *n)
            .collect();
        assert_eq!(copiers, [worst.0], "epoch {epoch}: {at:?}");
        let copied = &worst.2["copied"];
        assert_eq!(copied["from"], best.0, "epoch {epoch}");
        // The best's rate, ×1.2 or ×0.8, or drawn again in the range.
        let (new, old) = (lr(&copied["values"]), lr(&best.2["values"]));
        assert!((1e-4..=1e-1).contains(&new), "{new}");
        let factor = new / old;
        if (factor - 1.2).abs() < 1e-9 || (factor - 0.8).abs() < 1e-9 {
            perturbed += 1;
        }
        // It trains the next interval at that rate.
        let next = &rows[worst.0 as usize - 1]["lineage"];
        if epoch < 3 {
            assert_eq!(lr(&next[epoch]["values"]), new, "epoch {epoch}");
        }
    }
    assert!(perturbed >= 1, "{rows:?}");
    // The exploit after epoch 1, reproduced by hand: the copied member's config trained for one
    // epoch, then resumed retuned at the copier's new rate. Its second epoch's val_loss is the
    // copier's, to the bit.
    let copier = rows
        .iter()
        .find(|r| !r["lineage"][0]["copied"].is_null())
        .unwrap();
    let copied = &copier["lineage"][0]["copied"];
    let from = &rows[copied["from"].as_u64().unwrap() as usize - 1];
    let set = |key: &str, value: f64| format!("{key}={value:?}");
    let (own, new) = (lr(&from["lineage"][0]["values"]), lr(&copied["values"]));
    let first = [&set("train.lr", own)[..], "run.name=\"by-hand\""];
    let args = [
        "train",
        "--config",
        "base.toml",
        "--set",
        first[0],
        "--set",
        first[1],
    ];
    let args = [&args[..], &["--set", "train.epochs=1", "--quiet"]].concat();
    assert_eq!(env.run(&args).code(), 0);
    let retuned = env.run(&[
        "train",
        "--resume",
        "runs/by-hand",
        "--retune",
        "--set",
        &set("train.lr", new),
        "--set",
        "train.epochs=2",
        "--quiet",
    ]);
    assert_eq!(retuned.code(), 0, "{}", retuned.stderr());
    let by_hand = env.snapshots("runs/by-hand");
    let second = (by_hand.iter())
        .find(|s| s["event"] == "epoch" && s["epoch"] == 2)
        .unwrap();
    assert_eq!(second["val_loss"], copier["lineage"][1]["value"]);
    // Without --retune the new rate is refused, naming the key.
    let plain = env.run(&[
        "train",
        "--resume",
        "runs/by-hand",
        "--set",
        "train.lr=0.5",
        "--set",
        "train.epochs=3",
    ]);
    let says = "train.lr too, retuned (tidemark train --resume DIR --retune; Trainer::retune)";
    plain.fails_with_detail(2, &["train.lr is"], &[says]);
    // A population resumed to train longer: refused, its intervals were decided for 4 epochs.
    let longer = [
        "sweep",
        "--resume",
        "runs/small-sweep",
        "--set",
        "train.epochs=6",
    ];
    let says = "train.epochs is 4 in the search's config.toml but 6 here: a population's";
    env.run(&longer).fails_with(2, &[says]);
}

#[test]
fn the_schedule_report_gives_trains_the_best_member_again_to_the_bit() {
    let env = Env::new();
    population(&env, "");
    // Seed 6: the best member copied another after epoch 2.
    let run = env.run(&["sweep", "--config", "search.toml", "--set", "sweep.seed=6"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let report = env.run(&["report", "runs/small-sweep"]);
    let text = report.stdout();
    let best = (rows(&env, "runs/small-sweep").into_iter())
        .find(|r| r["rank"] == 1)
        .unwrap();
    let lineage = best["lineage"].as_array().unwrap();
    assert!(lineage.iter().any(|i| !i["copied"].is_null()), "{best}");
    // The config block the report ends with: `lr = X`, then the piecewise schedule.
    let block = text
        .split("```toml\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let table: toml::Table = toml::from_str(block).unwrap();
    let schedule = &table["train"]["schedule"];
    assert_eq!(schedule["kind"].as_str(), Some("piecewise"), "{text}");
    let list = |v: &toml::Value| v.to_string();
    let sets = [
        format!("train.lr={}", table["train"]["lr"]),
        "train.schedule.kind=\"piecewise\"".to_string(),
        format!(
            "train.schedule.milestones={}",
            list(&schedule["milestones"])
        ),
        format!("train.schedule.factors={}", list(&schedule["factors"])),
        "run.name=\"replay\"".to_string(),
    ];
    let mut args = vec!["train", "--config", "base.toml", "--quiet"];
    for set in &sets {
        args.extend(["--set", set]);
    }
    let replay = env.run(&args);
    assert_eq!(replay.code(), 0, "{}", replay.stderr());
    // One run on that schedule trains the best member's weights again: the same value.
    let summary = env.summary("runs/replay");
    assert_eq!(summary["final_val_loss"], best["monitored"], "{text}");
}

#[test]
fn in_parallel_under_leases_the_population_ends_as_in_one_process() {
    let env = Env::new();
    population(&env, "");
    let one = env.run(&["sweep", "--config", "search.toml", "--out", "one"]);
    assert_eq!(one.code(), 0, "{}", one.stderr());
    let packed = [
        "sweep",
        "--config",
        "search.toml",
        "--out",
        "two",
        "--set",
        "sweep.parallel=2",
        "--set",
        "sweep.budget=\"2GiB\"",
    ];
    let two = env.run(&packed);
    assert_eq!(two.code(), 0, "{}", two.stderr());
    let lineage = |dir: &str| -> Vec<(Value, Value)> {
        (rows(&env, dir).into_iter())
            .map(|r| (r["lineage"].clone(), r["monitored"].clone()))
            .collect()
    };
    assert_eq!(lineage("one/small-sweep"), lineage("two/small-sweep"));
    let leased = rows(&env, "two/small-sweep");
    assert!(
        leased.iter().all(|r| r["lease_bytes"].as_u64() > Some(0)),
        "{leased:?}"
    );
}

/// `tidemark sweep --config search.toml --storage journal.log --out OUT` as `n` workers at
/// once; each one's exit status and stderr.
fn workers(env: &Env, outs: &[&str]) -> Vec<(bool, String)> {
    let children: Vec<std::process::Child> = (outs.iter())
        .map(|out| {
            std::process::Command::new(env!("CARGO_BIN_EXE_tidemark"))
                .args([
                    "sweep",
                    "--config",
                    "search.toml",
                    "--storage",
                    "journal.log",
                ])
                .args(["--out", out])
                .current_dir(env.path("."))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    (children.into_iter())
        .map(|child| {
            let output = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
            (output.status.success(), stderr)
        })
        .collect()
}

#[test]
fn two_workers_of_one_study_sharing_a_directory_end_as_one_process() {
    let env = Env::new();
    population(&env, "");
    let one = env.run(&["sweep", "--config", "search.toml", "--out", "one"]);
    assert_eq!(one.code(), 0, "{}", one.stderr());
    for (ok, stderr) in workers(&env, &["shared", "shared"]) {
        assert!(ok, "{stderr}");
    }
    let lineage = |dir: &str| -> Vec<(Value, Value)> {
        (rows(&env, dir).into_iter())
            .map(|r| (r["lineage"].clone(), r["monitored"].clone()))
            .collect()
    };
    assert_eq!(lineage("one/small-sweep"), lineage("shared/small-sweep"));
    // Workers in directories of their own cannot copy each other's checkpoints: a member
    // that goes on where its run is not fails, saying why, and none starts over.
    let apart = Env::new();
    population(&apart, "");
    let ended = workers(&apart, &["out-a", "out-b"]);
    let said: String = ended.iter().map(|(_, e)| e.as_str()).collect();
    let rows_of = |dir: &str| rows(&apart, dir);
    let failed = (rows_of("out-a/small-sweep").into_iter())
        .filter(|r| r["status"] == "failed")
        .map(|r| r["reason"].as_str().unwrap_or_default().to_string())
        .collect::<Vec<_>>();
    // Which member a worker takes is a race: where one went on in the other's directory, it
    // failed with the reason; in any case no member trained an epoch twice.
    for reason in &failed {
        assert!(
            reason.contains("the workers of a population share one sweep directory"),
            "{reason}\n{said}"
        );
    }
    // Each member's epochs, in both directories together: none trained twice.
    for r in rows_of("out-a/small-sweep") {
        let name = r["name"].as_str().unwrap().to_string();
        let mut epochs: Vec<u64> = Vec::new();
        for dir in ["out-a", "out-b"] {
            let path = apart.path(dir).join(&name).join("snapshots.jsonl");
            let text = std::fs::read_to_string(path).unwrap_or_default();
            epochs.extend(
                (text.lines())
                    .map(|l| serde_json::from_str::<Value>(l).unwrap())
                    .filter(|s| s["event"] == "epoch")
                    .map(|s| s["epoch"].as_u64().unwrap()),
            );
        }
        let all = epochs.len();
        epochs.sort_unstable();
        epochs.dedup();
        assert_eq!(epochs.len(), all, "{name} trained an epoch twice\n{said}");
    }
}

/// A population (`[sweep]` keys `keys`) killed at each of `moments` and resumed: each ends
/// with the uninterrupted search's members, values and lineage, and no child left.
fn killed_anywhere(keys: &str, moments: &[&str]) {
    let env = Env::new();
    population(&env, keys);
    let whole = env.run(&["sweep", "--config", "search.toml"]);
    assert_eq!(whole.code(), 0, "{}", whole.stderr());
    let outcome_whole = outcome(&env, "runs/small-sweep");
    let lineage = |dir: &str| -> Vec<Value> {
        (rows(&env, dir).into_iter())
            .map(|r| r["lineage"].clone())
            .collect()
    };
    let whole_lineage = lineage("runs/small-sweep");
    kill_everywhere(&env, moments, |armed, dir, resumed| {
        same(armed, resumed, &outcome_whole);
        assert_eq!(lineage(dir), whole_lineage, "{armed}");
    });
}

#[test]
fn a_population_killed_anywhere_ends_with_the_lineage_of_one_never_stopped() {
    // Between an exploit's copy and its record, and the moments of every search.
    let moments: Vec<&str> = ["copied:1", "copied:2", "copied:3"]
        .into_iter()
        .chain(MOMENTS.iter().copied().step_by(3))
        .collect();
    killed_anywhere("", &moments);
}

#[test]
fn a_population_two_at_a_time_killed_anywhere_ends_with_the_same_lineage_and_no_child_left() {
    // The copy in the search's process, before a member's child starts; a child's step; the
    // search between two children.
    let moments = ["copied:1", "copied:2", "start:6", "step:40", "ended:9"];
    killed_anywhere("parallel = 2\nbudget = \"2GiB\"", &moments);
}

#[test]
fn what_a_population_cannot_mean_is_refused_naming_the_key() {
    let env = Env::new();
    population(&env, "");
    let cases: [(&[&str], &str); 6] = [
        (
            &["sweep.vary.model.hidden=[[8], [16]]"],
            "sweep.vary.model.hidden: population based training varies what a member can \
             change as it goes on from a copied checkpoint: train.lr,",
        ),
        (
            &["sweep.trials=8"],
            "sweep.trials: with method = \"pbt\", the members are sweep.pbt.population",
        ),
        (
            &["sweep.prune.method=\"asha\""],
            "sweep.prune: population based training prunes no member",
        ),
        (
            &["sweep.pbt.interval=4"],
            "sweep.pbt.interval: 4 epochs leave no interval before train.epochs = 4",
        ),
        (
            &["sweep.pbt.quantile=0.7"],
            "sweep.pbt.quantile: must be in (0, 0.5]: the bottom copies the top, got 0.7",
        ),
        (
            &["sweep.method=\"random\"", "sweep.trials=4"],
            "sweep.pbt: needs method = \"pbt\"",
        ),
    ];
    for (sets, says) in cases {
        let mut args = vec!["sweep", "--config", "search.toml"];
        for set in sets {
            args.extend(["--set", set]);
        }
        env.run(&args).fails_with(2, &[says]);
    }
    assert!(!env.path("runs").exists());
}
