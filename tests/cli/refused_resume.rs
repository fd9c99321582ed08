//! Check, then change (issue 51): a resume reads every file it will need first, and a refusal
//! leaves the run byte-for-byte as it was: the plateau schedule's state (garbled, missing, out
//! of range), the moving average, and the ranking `checkpoint.keep_best` deletes by (garbled,
//! or missing while it would delete checkpoints it does not list).

use super::lr_find::files;
use super::resume::copy_dir;
use super::{Env, SMALL};

#[test]
fn a_refused_resume_changes_nothing() {
    let env = Env::new();
    let text = SMALL
        .replace("samples = 1200", "samples = 600")
        .replace("epochs = 3", "epochs = 4");
    let config = format!(
        "{text}\n[train.schedule]\nkind = \"plateau\"\npatience = 1\n[train.ema]\ndecay = 0.9\n\
         [checkpoint]\nkeep_best = 2\n"
    );
    env.write("run.toml", &config);
    let run = env.run(&["train", "--config", "run.toml", "--quiet"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let done = env.path("runs/small");
    let latest = std::fs::read_to_string(done.join("checkpoints/latest")).unwrap();
    let latest = format!("checkpoints/{}", latest.trim());
    // A damaged file is written at the size it had (padded with spaces), so that the check of
    // its content is what refuses it; one of another size, the manifest's check (last case).
    let cases: [(&str, &str, Option<&str>, &str); 7] = [
        (
            "plateau garbled",
            "PLATEAU",
            Some("{oops"),
            "not a plateau's state",
        ),
        ("plateau missing", "PLATEAU", None, "plateau.json"),
        (
            "plateau out of range",
            "PLATEAU",
            Some(r#"{"best": 0.5, "wait": 0, "cooldown_left": 0, "scale": -1.0}"#),
            "scale = -1: the factor on the configured rate must be in (0, 1]",
        ),
        ("average missing", "EMA", None, "ema.bpk: missing"),
        (
            "ranking garbled",
            "RANKING",
            Some("[{"),
            "not a ranking of checkpoints",
        ),
        (
            "ranking missing",
            "RANKING",
            None,
            "ranking.json: missing, and checkpoint.keep_best would delete the checkpoints",
        ),
        (
            "plateau cut short",
            "PLATEAU",
            Some("{"),
            "plateau.json: 1 bytes, where the checkpoint's manifest.json lists",
        ),
    ];
    for (i, (case, file, content, needle)) in cases.into_iter().enumerate() {
        let copy = env.path(&format!("copy-{i}"));
        copy_dir(&done, &copy);
        let path = match file {
            "PLATEAU" => copy.join(&latest).join("plateau.json"),
            "EMA" => copy.join(&latest).join("ema.bpk"),
            _ => copy.join("checkpoints/ranking.json"),
        };
        let size = std::fs::metadata(&path).unwrap().len() as usize;
        match content {
            Some(text) if case.ends_with("short") => std::fs::write(&path, text).unwrap(),
            Some(text) => std::fs::write(&path, format!("{text:<size$}")).unwrap(),
            None => std::fs::remove_file(&path).unwrap(),
        }
        let before = files(&copy);
        let dir = copy.display().to_string();
        let resumed = env.run(&["train", "--resume", &dir, "--set", "train.epochs=5"]);
        resumed.fails_with(2, &[needle]);
        assert!(
            resumed.stderr().contains(&path.display().to_string()),
            "{case}"
        );
        assert!(files(&copy) == before, "{case}: the run changed");
    }
}

/// Two resumes of one run: the second is refused while the first trains (they wrote, renamed
/// and deleted the same checkpoints, and one ended failed naming a checkpoint the other had
/// deleted), and once the first is killed the run resumes again: the lock goes with its
/// process.
#[test]
fn a_run_another_process_trains_is_not_resumed_beside_it() {
    let env = Env::small();
    assert_eq!(env.train_small("small", &["--quiet"]).code(), 0);
    let resume = ["train", "--resume", "runs/small", "--quiet"];
    let mut first = env.spawn(&[&resume[..], &["--set", "train.epochs=100000"]].concat());
    let snapshots = env.path("runs/small/snapshots.jsonl");
    super::wait_for(&mut first, "the first resume's start", || {
        let text = std::fs::read_to_string(&snapshots).unwrap_or_default();
        text.contains("\"event\":\"resume\"").then_some(())
    });
    let second = env.run(&[&resume[..], &["--set", "train.epochs=100001"]].concat());
    second.fails_with(
        2,
        &[
            "runs/small: another process is training this run",
            "before resuming",
        ],
    );
    first.kill().unwrap();
    first.wait().unwrap();
    let one_more = format!("train.epochs={}", env.epochs_done("runs/small") + 1);
    let again = env.run(&[&resume[..], &["--set", &one_more]].concat());
    assert_eq!(again.code(), 0, "{}", again.stderr());
}
