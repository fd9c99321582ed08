//! Nothing outside a run is touched through a name read back from its files (issue 65): a
//! checkpoint's `manifest.json` that lists a file with `..`, an absolute path, a name with a
//! separator, or a file that is a symbolic link out of the run is refused, exit 2, naming the
//! file and the entry, by `train --resume`, `evaluate`, a population's resume (whose members
//! copy each other's checkpoints) and `report`; and no byte outside or inside changes.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::Env;

/// Every file under `dir`, not following links: a file's bytes, a link's target.
pub(super) fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            let target = std::fs::read_link(&path).unwrap();
            out.insert(name, format!("-> {}", target.display()).into_bytes());
        } else if kind.is_dir() {
            for (k, v) in tree(&path) {
                out.insert(format!("{name}/{k}"), v);
            }
        } else {
            out.insert(name, std::fs::read(&path).unwrap());
        }
    }
    out
}

/// The ways a manifest reaches out, each planted in the checkpoint directory `dir` against the
/// file `secret` outside: its name for the error, and the entry it lists.
const CASES: [&str; 4] = ["dot-dot", "absolute", "symlink", "separator"];

/// Plants `case` in the checkpoint `dir`; returns the entry the error must name.
fn plant(case: &str, dir: &Path, secret: &Path) -> String {
    let path = dir.join("manifest.json");
    let mut manifest: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let size = std::fs::metadata(secret).unwrap().len();
    let depth = dir.components().count();
    let entry = match case {
        "dot-dot" => format!("{}{}", "../".repeat(depth), secret.display()),
        "absolute" => secret.display().to_string(),
        "symlink" => {
            // The weights' file made a link to the secret, at its size.
            std::fs::remove_file(dir.join("model.bpk")).unwrap();
            std::os::unix::fs::symlink(secret, dir.join("model.bpk")).unwrap();
            "model.bpk".to_string()
        }
        "separator" => {
            std::fs::create_dir(dir.join("sub")).unwrap();
            std::fs::copy(secret, dir.join("sub/model.bpk")).unwrap();
            "sub/model.bpk".to_string()
        }
        _ => unreachable!(),
    };
    manifest["files"][&entry] = size.into();
    std::fs::write(&path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    entry
}

/// The checkpoint directory that `latest` names in `run`.
fn latest(run: &Path) -> std::path::PathBuf {
    let checkpoints = run.join("checkpoints");
    let name = std::fs::read_to_string(checkpoints.join("latest")).unwrap();
    checkpoints.join(name.trim())
}

#[test]
fn a_manifest_reaching_outside_its_run_is_refused_and_changes_no_byte() {
    let env = Env::small();
    assert_eq!(env.train_small("done", &["--quiet"]).code(), 0);
    let secret = env.path("secret.txt");
    std::fs::write(&secret, "the colleague's data, not the run's\n").unwrap();
    for case in CASES {
        let run = format!("runs/{case}");
        super::resume::copy_dir(&env.path("runs/done"), &env.path(&run));
        let entry = plant(case, &latest(&env.path(&run)), &secret);
        let before = tree(env.dir.path());
        let commands: [&[&str]; 3] = [
            &["train", "--resume", &run, "--set", "train.epochs=4"],
            &["evaluate", &run, "--checkpoint", "latest"],
            &["evaluate", &run],
        ];
        for args in commands {
            let out = env.run(args);
            let said = match case {
                "symlink" => "a symbolic link leads out of".to_string(),
                _ => format!("lists {entry:?}, which is not one of the checkpoint's files"),
            };
            out.fails_with(2, &[&said, "nothing was read or changed"]);
            assert_eq!(
                tree(env.dir.path()),
                before,
                "{case}: {args:?} changed a byte"
            );
        }
        // The report reads no checkpoint: it redraws the run's picture, the same.
        let report = env.run(&["report", &run]);
        assert_eq!(report.code(), 0, "{case}: {}", report.stderr());
        assert_eq!(
            tree(env.dir.path()),
            before,
            "{case}: report changed a byte"
        );
    }
}

/// A run's `config.toml` is the run's own: one that is a link out of the run is neither read
/// nor replaced, and a resume that fails (a config edited to a model its checkpoint does not
/// hold) leaves the run's config as it was.
#[test]
fn a_resume_reads_only_its_own_config_and_rewrites_it_only_once_the_checkpoint_loads() {
    let env = Env::small();
    assert_eq!(env.train_small("done", &["--quiet"]).code(), 0);
    let config = env.path("runs/done/config.toml");
    let own = std::fs::read_to_string(&config).unwrap();
    std::fs::write(env.path("elsewhere.toml"), &own).unwrap();
    std::fs::remove_file(&config).unwrap();
    std::os::unix::fs::symlink(env.path("elsewhere.toml"), &config).unwrap();
    let before = tree(env.dir.path());
    let out = env.run(&["train", "--resume", "runs/done", "--set", "train.epochs=4"]);
    out.fails_with(
        2,
        &[
            "--resume runs/done",
            "config.toml: a symbolic link leads out of",
            "nothing was read or changed",
        ],
    );
    assert_eq!(tree(env.dir.path()), before);

    std::fs::remove_file(&config).unwrap();
    let hidden = own.lines().find(|l| l.starts_with("hidden = ")).unwrap();
    let edited = own.replace(hidden, "hidden = [5]");
    std::fs::write(&config, &edited).unwrap();
    let before = tree(env.dir.path());
    let out = env.run(&["train", "--resume", "runs/done", "--set", "train.epochs=4"]);
    assert_eq!(out.code(), 2, "{}", out.stderr());
    assert!(
        out.stderr().contains("cannot be loaded"),
        "{}",
        out.stderr()
    );
    assert_eq!(
        tree(env.dir.path()),
        before,
        "a failed resume changed a file"
    );
}

#[test]
fn a_population_resumed_with_a_manifest_reaching_outside_copies_nothing() {
    let env = Env::new();
    super::pbt::population(&env, "");
    // Stopped once every member paused at the first interval, before its decision: the resume
    // decides it, and a member copies another's checkpoint.
    env.killed_at(&["sweep", "--config", "search.toml"], "ended:4");
    let stopped = env.path("stopped");
    super::resume::copy_dir(&env.path("runs/small-sweep"), &stopped);
    let secret = env.path("secret.txt");
    std::fs::write(&secret, "the colleague's data, not the search's\n").unwrap();
    for case in CASES {
        let dir = env.path("runs/small-sweep");
        std::fs::remove_dir_all(&dir).unwrap();
        super::resume::copy_dir(&stopped, &dir);
        // Every member's checkpoint: whichever is copied lists the entry.
        let entries: Vec<String> = (1..=4)
            .map(|n| plant(case, &latest(&dir.join(format!("trial-{n:03}"))), &secret))
            .collect();
        let before = tree(env.dir.path());
        let out = env.run(&["sweep", "--resume", "runs/small-sweep"]);
        let said = match case {
            "symlink" => "a symbolic link leads out of".to_string(),
            _ => format!(
                "lists {:?}, which is not one of the checkpoint's files",
                entries[0]
            ),
        };
        out.fails_with(2, &["trial-001/checkpoints/epoch-1", &said]);
        assert_eq!(
            tree(env.dir.path()),
            before,
            "{case}: the resume changed a byte"
        );
        // Its report neither: the stopped population's trials are read, no checkpoint.
        let report = env.run(&["report", "runs/small-sweep"]);
        assert_eq!(report.code(), 0, "{case}: {}", report.stderr());
        let after = tree(env.dir.path());
        let outside = |t: &BTreeMap<String, Vec<u8>>| t["secret.txt"].clone();
        assert_eq!(outside(&after), outside(&before), "{case}");
        let checkpoints = |t: &BTreeMap<String, Vec<u8>>| -> Vec<(String, Vec<u8>)> {
            (t.iter())
                .filter(|(k, _)| k.contains("/checkpoints/"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        assert_eq!(checkpoints(&after), checkpoints(&before), "{case}");
    }
}

#[test]
fn a_trial_s_launch_files_keep_it_inside_its_search_and_its_study() {
    let env = Env::small();
    let grid = format!(
        "{}\n[sweep]\nparallel = 2\nbudget = \"2GiB\"\n\n[sweep.vary]\ntrain.lr = [0.01, 0.003]\n",
        super::SMALL
    );
    env.write("grid.toml", &grid);
    let run = env.run(&["sweep", "--config", "grid.toml"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let launch = "runs/small-sweep/launch/trial-001.toml";
    let toml = std::fs::read_to_string(env.path(launch)).unwrap();
    let trial = |envs: &[(&str, String)]| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_tidemark"));
        command.args(["trial", launch]).current_dir(env.dir.path());
        for (key, value) in envs {
            command.env(key, value);
        }
        super::Run(command.output().unwrap())
    };
    // A launch file edited to train elsewhere trains nowhere.
    let at = "output_dir = \"runs/small-sweep\"";
    assert!(toml.contains(at), "{toml}");
    std::fs::write(
        env.path(launch),
        toml.replace(at, "output_dir = \"elsewhere\""),
    )
    .unwrap();
    let before = tree(env.dir.path());
    let says = "run.output_dir and run.name name elsewhere/trial-001, which is not this trial's \
                directory beside its launch file";
    trial(&[]).fails_with(2, &["launch/trial-001.toml: ", says]);
    assert_eq!(tree(env.dir.path()), before);
    std::fs::write(env.path(launch), &toml).unwrap();
    // Its study file, edited to name another storage, is refused: the child writes only to the
    // storage its search gave it.
    let study = env.path("runs/small-sweep/launch/trial-001.study.json");
    let mut reports: Value = serde_json::from_slice(&std::fs::read(&study).unwrap()).unwrap();
    let own = reports["storage"].as_str().unwrap().to_string();
    let pid = std::process::id();
    reports["storage"] = "other/journal.log".into();
    reports["pid"] = pid.into();
    std::fs::write(&study, serde_json::to_vec(&reports).unwrap()).unwrap();
    let before = tree(env.dir.path());
    let envs = [
        ("TIDEMARK_SEARCH_PID", pid.to_string()),
        ("TIDEMARK_STUDY_STORAGE", own.clone()),
    ];
    let says = format!(
        "names the storage other/journal.log, where the search that started this trial writes \
         to {own}"
    );
    trial(&envs).fails_with(2, &["trial-001.study.json: ", &says]);
    assert_eq!(tree(env.dir.path()), before);
}
