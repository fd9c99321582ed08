//! Broken input to every command, as a user would meet it: a damaged file, a setting the run
//! cannot use, a flag that does not apply. Each is refused before any work with one line naming
//! what is wrong and a documented exit code, and nothing already written is changed.

use super::{Env, SMALL};

/// A two-trial grid of one epoch each, searched in `runs/small-sweep`.
fn searched(env: &Env) {
    let config = format!("{SMALL}\n[sweep]\n[sweep.vary]\ntrain.lr = [0.01, 0.0001]\n");
    env.write("grid.toml", &config);
    let run = env.run(&["sweep", "--config", "grid.toml", "--set", "train.epochs=1"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
}

fn read(env: &Env, rel: &str) -> Vec<u8> {
    std::fs::read(env.path(rel)).unwrap()
}

#[test]
fn a_damaged_trial_summary_is_named_and_nothing_recorded_is_rewritten() {
    let env = Env::small();
    searched(&env);
    let (json, md) = (
        read(&env, "runs/small-sweep/sweep.json"),
        read(&env, "runs/small-sweep/sweep.md"),
    );
    env.write("runs/small-sweep/trial-001/summary.json", "garbage");
    let needles = [
        "runs/small-sweep/trial-001/summary.json",
        "not a run summary",
    ];
    // A resume reads each trial's summary (to train again one that fell short): refused.
    env.run(&["sweep", "--resume", "runs/small-sweep"])
        .fails_with(2, &needles);
    assert_eq!(read(&env, "runs/small-sweep/sweep.json"), json);
    assert_eq!(read(&env, "runs/small-sweep/sweep.md"), md);
    // A report ranks from the journal, which recorded the trial as it ended: the same ranking.
    let report = env.run(&["report", "runs/small-sweep"]);
    assert_eq!(report.code(), 0, "{}", report.stderr());
    assert_eq!(read(&env, "runs/small-sweep/sweep.json"), json);
    assert_eq!(read(&env, "runs/small-sweep/sweep.md"), md);
    // The trial's own directory is not trained again over its damaged record.
    assert_eq!(
        read(&env, "runs/small-sweep/trial-001/summary.json"),
        b"garbage"
    );
}

#[test]
fn a_run_s_damaged_summary_or_lost_final_checkpoint_is_named() {
    let env = Env::small();
    assert_eq!(env.train_small("r", &["--set", "train.epochs=1"]).code(), 0);
    // summary.json names epoch-1 as the final weights; without it, blame that, not a flag.
    std::fs::remove_dir_all(env.path("runs/r/checkpoints/epoch-1")).unwrap();
    env.run(&["evaluate", "runs/r"]).fails_with(
        2,
        &[
            "runs/r/checkpoints/epoch-1/meta.json: missing",
            "runs/r/summary.json names checkpoint \"epoch-1\"",
        ],
    );
    let run = env.run(&["evaluate", "runs/r"]);
    assert!(!run.stderr().contains("--checkpoint:"), "{}", run.stderr());
    let svg = read(&env, "runs/r/memory.svg");
    env.write("runs/r/summary.json", "{");
    for command in ["report", "evaluate"] {
        env.run(&[command, "runs/r"])
            .fails_with(2, &["runs/r/summary.json: not a run summary"]);
    }
    assert_eq!(read(&env, "runs/r/memory.svg"), svg);
}

#[test]
fn report_evaluate_and_predict_give_one_not_a_run_directory_error() {
    let env = Env::small();
    std::fs::create_dir(env.path("empty")).unwrap();
    let predict = |dir: &'static str| vec!["predict", dir, "--data", "x.csv", "--out", "p.csv"];
    for (dir, why) in [
        ("nowhere", "nowhere: not a run directory: no such directory"),
        (
            "small.toml",
            "small.toml: not a run directory: it is a file",
        ),
        ("empty", "empty: not a run directory: empty/"),
    ] {
        for args in [vec!["report", dir], vec!["evaluate", dir], predict(dir)] {
            env.run(&args).fails_with(2, &[why]);
        }
    }
    assert!(!env.path("p.csv").exists());
}

#[test]
fn a_cut_last_snapshot_is_said_and_the_report_goes_on_and_a_bad_line_is_named_once() {
    let env = Env::small();
    assert_eq!(env.train_small("k", &["--set", "train.epochs=2"]).code(), 0);
    let path = env.path("runs/k/snapshots.jsonl");
    let mut text = std::fs::read_to_string(&path).unwrap();
    let lines = text.lines().count();
    // A kill while the next line was appended: half of it, and no end.
    text.push_str(r#"{"event":"epoch","epoch":3,"#);
    std::fs::write(&path, &text).unwrap();
    let run = env.run(&["report", "runs/k"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let cut = format!(
        "runs/k/snapshots.jsonl:{}: the last line is cut off",
        lines + 1
    );
    assert!(run.stdout().contains(&cut), "{}", run.stdout());
    // A complete line that is not a snapshot: the file and line, said once.
    text.push('\n');
    std::fs::write(&path, &text).unwrap();
    let run = env.run(&["report", "runs/k"]);
    run.fails_with(
        2,
        &[&format!(
            "runs/k/snapshots.jsonl:{}: not a snapshot",
            lines + 1
        )],
    );
    assert_eq!(run.stderr().matches("snapshots.jsonl").count(), 1);
}

#[test]
fn a_shard_of_a_config_without_a_sweep_table_is_refused() {
    let env = Env::small();
    for flags in [&["--shard", "0/2"][..], &["--shards", "2"]] {
        let mut args = vec!["sweep", "--config", "small.toml"];
        args.extend_from_slice(flags);
        env.run(&args)
            .fails_with(2, &[flags[0], "small.toml has no [sweep] table"]);
    }
    assert!(!env.path("runs").exists(), "nothing trained");
}

#[test]
fn a_monitor_the_task_does_not_report_is_refused_before_anything_trains() {
    let env = Env::small();
    let config = format!(
        "{SMALL}\n[sweep]\nmonitor = \"val_mae\"\n[sweep.vary]\ntrain.lr = [0.01, 0.001]\n"
    );
    env.write("grid.toml", &config);
    env.run(&["sweep", "--config", "grid.toml"]).fails_with(
        2,
        &[
            "sweep.monitor = \"val_mae\"",
            "it reports val_loss, val_accuracy",
        ],
    );
    env.train_small("t", &["--set", "train.early_stopping.monitor=\"val_rmse\""])
        .fails_with(
            2,
            &[
                "train.early_stopping.monitor = \"val_rmse\"",
                "it reports val_loss, val_accuracy",
            ],
        );
    // Refused before the first epoch: no run or sweep directory was made.
    assert!(!env.path("runs").exists());
}

#[test]
fn a_warmup_longer_than_the_run_is_refused_and_a_decay_it_cannot_reach_is_warned() {
    let env = Env::small();
    // 960 training samples in batches of 32: 30 steps an epoch, 90 in the run.
    env.train_small("w", &["--set", "train.schedule.warmup_steps=100000"])
        .fails_with(
            2,
            &["train.schedule.warmup_steps = 100000", "90 optimizer steps"],
        );
    assert!(
        !env.path("runs/w").exists(),
        "refused before the run directory"
    );
    let run = env.train_small(
        "d",
        &[
            "--set",
            "train.schedule.kind=\"cosine\"",
            "--set",
            "train.schedule.warmup_steps=90",
            "--set",
            "train.schedule.decay_steps=50",
        ],
    );
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert!(
        run.stderr()
            .contains("warning: train.schedule.decay_steps = 50 is longer than the 0"),
        "{}",
        run.stderr()
    );
}

#[test]
fn a_file_where_the_directory_of_runs_is_expected_is_named() {
    let env = Env::small();
    for command in ["train", "sweep"] {
        env.run(&[
            command,
            "--config",
            "small.toml",
            "--out",
            "small.toml/runs",
        ])
        .fails_with(2, &["small.toml: a file, where a directory of runs"]);
    }
    let text = std::fs::read_to_string(env.path("small.toml")).unwrap();
    assert_eq!(text, SMALL, "the file is left as it was");
}

#[test]
fn offload_to_the_host_on_flex_is_refused_before_the_run_directory() {
    let env = Env::small();
    env.run(&[
        "train",
        "--config",
        "small.toml",
        "--set",
        "train.offload.gradients=host",
    ])
    .fails_with(
        2,
        &[
            "--set train.offload.gradients=host: train.offload.gradients = \"host\" has nothing \
             to move on device.backend = \"flex\"",
        ],
    );
    env.run(&[
        "train",
        "--config",
        "small.toml",
        "--set",
        "train.offload.gradients=gpu",
    ])
    .fails_with(
        2,
        &["train.offload.gradients must be one of \"none\", \"host\", \"auto\", got \"gpu\""],
    );
    env.run(&[
        "train",
        "--config",
        "small.toml",
        "--set",
        "train.offload.optimizer=\"host\"",
    ])
    .fails_with(
        2,
        &["train.offload.optimizer = \"host\" has nothing to move on device.backend = \"flex\""],
    );
    assert!(!env.path("runs").exists(), "nothing was written");
}

/// A name is the user's to choose, and the terminal is theirs too: a `run.name` holding an
/// escape sequence that clears the screen is shown escaped, on stdout and stderr alike.
#[test]
fn control_characters_in_a_name_are_shown_escaped() {
    let env = Env::new();
    let config = SMALL
        .replace("name = \"small\"", "name = \"a\\u001b[2Jb\"")
        .replace("epochs = 3", "epochs = 1");
    env.write("esc.toml", &config);
    let run = env.run(&["train", "--config", "esc.toml"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    for text in [run.stdout(), run.stderr()] {
        assert!(!text.contains('\u{1b}'), "{text}");
    }
    assert!(
        run.stdout().contains("a\\u{1b}[2Jb: 1 epochs"),
        "{}",
        run.stdout()
    );
}

/// Every file under the environment's directory, with its bytes.
fn tree(env: &Env) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut dirs = vec![env.path("")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn a_path_that_is_not_utf8_is_refused_in_one_line_and_nothing_is_written() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let env = Env::small();
    let odd = OsStr::from_bytes(b"r\xff");
    let needles = ["\"r\\xFF\" is not valid UTF-8", "rename it"];
    let before = tree(&env);
    for command in ["train", "sweep"] {
        let args = [command, "--config", "small.toml", "--out"].map(OsStr::new);
        let run = env.run_os(&[&args[..], &[odd]].concat());
        run.fails_with(2, &["--out: ", needles[0], needles[1]]);
    }
    assert_eq!(tree(&env), before, "a refused --out wrote something");
    // A finished run moved under such a name: a resume or an evaluation, which would record
    // the directory's name, is refused before anything is read or written.
    assert_eq!(env.train_small("r", &["--set", "train.epochs=1"]).code(), 0);
    std::fs::rename(env.path("runs"), env.path("").join(odd)).unwrap();
    let before = tree(&env);
    let run_dir = env.path("").join(odd).join("r");
    let resume = ["train", "--set", "train.epochs=2", "--resume"].map(OsStr::new);
    env.run_os(&[&resume[..], &[run_dir.as_os_str()]].concat())
        .fails_with(2, &["--resume: ", "is not valid UTF-8"]);
    env.run_os(&[OsStr::new("evaluate"), run_dir.as_os_str()])
        .fails_with(2, &["the run directory: ", "is not valid UTF-8"]);
    assert_eq!(
        tree(&env),
        before,
        "a refused resume or evaluation wrote something"
    );
}

/// Sizes that would abort the process in an allocation are refused in one line first: a stray
/// label far above a file's rows (the model's output and the split's lists sized for classes
/// no row has), and a model whose parameters alone are more than the machine, for `train` and
/// for a search that probes its trials.
#[test]
fn sizes_no_allocation_survives_are_refused_before_they_are_allocated() {
    let env = Env::small();
    env.write(
        "stray.csv",
        "a,b,label\n1,2,0\n3,4,99999999999\n5,6,1\n7,8,0\n",
    );
    env.write(
        "stray.toml",
        "[model]\nhidden = [8]\n[data]\nkind = \"csv\"\npath = \"stray.csv\"\nlabel_column = \"label\"\n",
    );
    env.run(&["train", "--config", "stray.toml"]).fails_with(
        2,
        &["stray.csv: data row 2: label 99999999999 would make 100000000000 classes for 4 rows"],
    );
    let huge = "model.hidden=[1000000000, 1000000000]";
    let says = "the model's 1000000022000000004 parameters take";
    // Said as the run's error, after its directory's line: the model is made inside the run.
    let train = env.run(&["train", "--config", "small.toml", "--set", huge]);
    assert_eq!(train.code(), 3, "{}", train.stderr());
    let last = train
        .stderr()
        .trim_end()
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    for needle in [
        "error: ",
        says,
        "more than the host has in all",
        "nothing was allocated",
    ] {
        assert!(last.contains(needle), "{needle:?} not in {last}");
    }
    env.write(
        "grid.toml",
        &format!(
            "{SMALL}\n[sweep]\n[sweep.vary]\nmodel.hidden = [[8], [1000000000, 1000000000]]\n"
        ),
    );
    let sweep = env.run(&["sweep", "--config", "grid.toml"]);
    assert!(!sweep.stderr().contains("panicked"), "{}", sweep.stderr());
    assert!(sweep.stderr().contains(says), "{}", sweep.stderr());
}
