//! `tidemark lr-find` and `train.lr = "find"` (issue 42): Lightning's finder on a copy of the
//! run: the rates it swept, its smoothing checked against the losses it recorded, its stop,
//! its suggestion, and the run directory left as it was.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::Env;

/// Every file under `dir`, with its bytes.
pub(super) fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            match path.is_dir() {
                true => stack.push(path),
                false => {
                    let name = path.strip_prefix(dir).unwrap().display().to_string();
                    out.insert(name, std::fs::read(&path).unwrap());
                }
            }
        }
    }
    out
}

fn found(env: &Env) -> Value {
    let text = std::fs::read_to_string(env.path("runs/small-lr-find/lr-find.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn the_finder_suggests_a_rate_and_changes_no_run() {
    let env = Env::small();
    assert_eq!(env.train_small("small", &[]).code(), 0);
    let before = files(&env.path("runs/small"));
    let run = env.run(&["lr-find", "--config", "small.toml"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert_eq!(
        files(&env.path("runs/small")),
        before,
        "the run directory is as it was"
    );
    assert!(
        !env.path("runs/small-lr-find/steps").exists(),
        "the copy's steps are gone"
    );
    assert!(env.path("runs/small-lr-find/lr-find.svg").is_file());
    let found = found(&env);
    let points = found["points"].as_array().unwrap();
    assert!(
        points.len() >= 12 && points.len() <= 100,
        "{}",
        points.len()
    );
    // The rates: exponential from 1e-8 to 1 over 100 steps.
    for (i, p) in points.iter().enumerate() {
        let expected = 1e-8 * 1e8f64.powf(i as f64 / 99.0);
        let lr = p["lr"].as_f64().unwrap();
        assert!(
            (lr - expected).abs() <= 1e-12 * expected,
            "step {i}: {lr} against {expected}"
        );
    }
    // The smoothing, from the recorded losses: beta 0.98, bias-corrected.
    let mut avg = 0.0;
    for (i, p) in points.iter().enumerate() {
        avg = 0.98 * avg + 0.02 * p["loss"].as_f64().unwrap();
        let smoothed = avg / (1.0 - 0.98f64.powi(i as i32 + 1));
        assert!(
            (p["smoothed"].as_f64().unwrap() - smoothed).abs() < 1e-9,
            "step {i}"
        );
    }
    let at = found["suggestion"].as_u64().unwrap() as usize;
    assert!(
        at >= 10 && at < points.len() - 1,
        "skips the first 10 and the last: {at}"
    );
    assert_eq!(found["lr"], points[at]["lr"]);
    let said = format!(
        "lr-find: suggested lr {:.3e}",
        found["lr"].as_f64().unwrap()
    );
    assert!(run.stdout().contains(&said), "{}", run.stdout());
}

#[test]
fn a_diverging_sweep_stops_once_the_loss_passes_four_times_its_best() {
    let env = Env::small();
    let run = env.run(&[
        "lr-find",
        "--config",
        "small.toml",
        "--max-lr",
        "1e6",
        "--set",
        "train.optimizer=\"sgd\"",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let found = found(&env);
    let points = found["points"].as_array().unwrap();
    assert!(points.len() < 100, "{}", points.len());
    let stopped = found["stopped"].as_str().unwrap();
    let smoothed: Vec<f64> = points
        .iter()
        .map(|p| p["smoothed"].as_f64().unwrap())
        .collect();
    match stopped.contains("passed 4 times its best") {
        // The last point is the first past 4 times the best before it.
        true => {
            let best = smoothed[..smoothed.len() - 1]
                .iter()
                .copied()
                .fold(f64::MAX, f64::min);
            assert!(
                *smoothed.last().unwrap() > 4.0 * best,
                "{stopped}: {smoothed:?}"
            );
        }
        false => assert!(stopped.contains("not finite"), "{stopped}"),
    }
}

#[test]
fn train_lr_find_trains_at_the_rate_found_and_records_it() {
    let env = Env::small();
    let run = env.train_small("small", &["--set", "train.lr=\"find\""]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert!(
        run.stderr().contains("lr-find: suggested lr"),
        "{}",
        run.stderr()
    );
    let config = std::fs::read_to_string(env.path("runs/small/config.toml")).unwrap();
    let lr = found(&env)["lr"].as_f64().unwrap();
    assert!(config.contains(&format!("lr = {lr:?}")), "{config}");
    // A setting like any other: `validate` takes it, and prints it as written.
    let validate = env.run(&[
        "validate",
        "--config",
        "small.toml",
        "--set",
        "train.lr=\"find\"",
    ]);
    assert_eq!(validate.code(), 0, "{}", validate.stderr());
    assert!(
        validate.stdout().contains("lr = \"find\""),
        "{}",
        validate.stdout()
    );
    // A search takes a rate, or draws one: a finder in every trial is refused.
    let small = std::fs::read_to_string(env.path("small.toml")).unwrap();
    env.write(
        "grid.toml",
        &format!("{small}\n[sweep]\n[sweep.vary]\nmodel.hidden = [[8], [32]]\n"),
    );
    let search = [
        "sweep",
        "--config",
        "grid.toml",
        "--set",
        "train.lr=\"find\"",
    ];
    env.run(&search)
        .fails_with(2, &["train.lr = \"find\" in a search", "[sweep.vary]"]);
    let other = env.train_small("x", &["--set", "train.lr=\"fast\""]);
    other.fails_with(2, &["train.lr must be a number, or \"find\"; got \"fast\""]);
    let range = env.run(&["lr-find", "--config", "small.toml", "--min-lr", "0"]);
    range.fails_with(2, &["--min-lr 0", "both > 0, min below max"]);
    // A range whose ratio overflows would make every rate after the first infinite.
    for (min, max) in [("1e-10", "1e300"), ("1e-320", "1")] {
        let wide = env.run(&[
            "lr-find",
            "--config",
            "small.toml",
            "--min-lr",
            min,
            "--max-lr",
            max,
        ]);
        wide.fails_with(
            2,
            &[&format!("--min-lr {min}"), "max / min a finite number"],
        );
    }
}

/// `"find"` is a rate only where a finder runs: a search refuses it in any list a trial's
/// rate is drawn from (a grid's, random's, TPE's, a population's, written in the file or set
/// with `--set`), naming the key, before anything is written; nothing trains.
#[test]
fn a_search_refuses_find_in_every_list_a_trial_s_rate_is_drawn_from() {
    let env = Env::small();
    let small = std::fs::read_to_string(env.path("small.toml")).unwrap();
    let searches = [
        ("grid", ""),
        ("random", "trials = 4\n"),
        ("tpe", "trials = 4\n"),
        ("pbt", ""),
    ];
    for (method, keys) in searches {
        let file = format!("{method}.toml");
        env.write(
            &file,
            &format!(
                "{small}\n[sweep]\nmethod = \"{method}\"\n{keys}[sweep.vary]\n\
                 train.lr = [1e-3, \"find\"]\n"
            ),
        );
        let refused = ["sweep.vary.train.lr: \"find\" is not a rate", "list rates"];
        let at = format!("{file}:");
        env.run(&["sweep", "--config", &file])
            .fails_with(2, &[&at, refused[0], refused[1]]);
        env.run(&["validate", "--config", &file])
            .fails_with(2, &[&at, refused[0]]);
    }
    // Set on the command line, it is refused at the --set.
    env.write(
        "set.toml",
        &format!("{small}\n[sweep]\n[sweep.vary]\ntrain.lr = [1e-3]\n"),
    );
    let set = "sweep.vary.train.lr=[\"find\", 0.01]";
    env.run(&["sweep", "--config", "set.toml", "--set", set])
        .fails_with(2, &["--set sweep.vary.train.lr=", "\"find\" is not a rate"]);
    assert!(!env.path("runs").exists(), "nothing was written");
}

/// A retuned resume asks for a rate to go on at from the run's checkpoint; the finder's is a
/// rate to start a run at. `--retune --set train.lr="find"` is refused, naming the key, and the
/// run is left as it was (a plain resume still takes "find" as the rate the run had).
#[test]
fn a_retuned_resume_refuses_lr_find_and_leaves_the_run() {
    let env = Env::small();
    let trained = env.train_small("small", &["--set", "train.epochs=1"]);
    assert_eq!(trained.code(), 0, "{}", trained.stderr());
    let before = files(&env.path("runs/small"));
    let find = "train.lr=\"find\"";
    let resume = ["train", "--resume", "runs/small", "--set", "train.epochs=2"];
    let retuned = [&resume[..], &["--retune", "--set", find]].concat();
    env.run(&retuned).fails_with(
        2,
        &[
            "--resume runs/small: train.lr = \"find\" on a retuned resume",
            "give a rate",
        ],
    );
    assert_eq!(files(&env.path("runs/small")), before);
    assert!(!env.path("runs/small-lr-find").exists());
}
