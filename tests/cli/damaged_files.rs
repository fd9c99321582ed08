//! A corpus of damaged search files: each file a stopped parallel search keeps, cut in half, emptied, of the wrong type, with numbers negative
//! or too large. Every resume exits 0 with a correct search, or 2 with one line naming the
//! file (and the field and value, where the file has them); none panics, none overwrites the
//! damaged file or a trial's files.

use std::os::unix::process::ExitStatusExt;

use super::kill_anywhere::{config, outcome, rows, tidemark, trial_files, Outcome, LRS};
use super::resume::copy_dir;
use super::Env;

/// The ways a file is damaged: cut in half, emptied, of the wrong type, every whole number
/// made negative or too large.
fn damaged(text: &str) -> Vec<(&'static str, String)> {
    let numbers = |to: &str| {
        let mut out = String::new();
        let mut chars = text.chars().peekable();
        let mut last = ' ';
        while let Some(c) = chars.next() {
            if c.is_ascii_digit() && !last.is_alphanumeric() && last != '.' && last != '-' {
                let mut rest = String::new();
                while chars.peek().is_some_and(|d| d.is_ascii_digit()) {
                    rest.push(chars.next().unwrap());
                }
                if chars
                    .peek()
                    .is_some_and(|d| d.is_alphanumeric() || *d == '.')
                {
                    out.push(c);
                    out.push_str(&rest);
                } else {
                    out.push_str(to);
                }
                last = '0';
                continue;
            }
            out.push(c);
            last = c;
        }
        out
    };
    let wrong = match text.trim_start().starts_with('{') {
        true => "[]".to_string(),
        false => "run = [".to_string(),
    };
    vec![
        ("truncated", text[..text.len() / 2].to_string()),
        ("empty", String::new()),
        ("of the wrong type", wrong),
        ("with negative numbers", numbers("-1")),
        ("with numbers out of range", numbers("99999999999")),
    ]
}

/// A stopped search's copy to damage: where it is, its files to damage, and how it resumes
/// (`{out}` the copy's `--out`, `{dir}` its directory), with its rows in `rows`.
struct Stopped<'a> {
    dir: std::path::PathBuf,
    files: Vec<String>,
    resume: &'a [&'a str],
    rows: &'a str,
}

/// The files of `dir` named `names`, and its first launch file and gate file.
fn search_files(dir: &std::path::Path, names: &[&str]) -> Vec<String> {
    let launch: Vec<String> = (std::fs::read_dir(dir.join("launch")).unwrap().flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let first = |end: &str| {
        let name = launch.iter().find(|name| name.ends_with(end));
        format!(
            "launch/{}",
            name.unwrap_or_else(|| panic!("no {end} in {launch:?}"))
        )
    };
    let files = names.iter().map(|f| f.to_string());
    files.chain([first(".toml"), first(".gate.json")]).collect()
}

/// Damages each of `stopped`'s files in every way in turn, resumes the search, and fails
/// unless it resumed correctly (each completed trial with its value in `full`) or was
/// refused in one line naming the file, with nothing overwritten.
fn resume_damaged(env: &Env, name: &str, stopped: &Stopped, full: &Outcome) {
    for (i, file) in stopped.files.iter().enumerate() {
        let text = std::fs::read_to_string(stopped.dir.join(file)).unwrap();
        for (j, (how, bad)) in damaged(&text).into_iter().enumerate() {
            let case = format!("{name}: {file} {how}");
            let out = format!("{name}-{i}-{j}");
            let dir = format!("{out}/small-sweep");
            copy_dir(&stopped.dir, &env.path(&dir));
            std::fs::write(env.path(&dir).join(file), &bad).unwrap();
            let before = trial_files(env, &dir);
            let args: Vec<String> = (stopped.resume.iter())
                .map(|a| a.replace("{out}", &out).replace("{dir}", &dir))
                .collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (status, stderr) = tidemark(env, &args, None);
            assert!(!stderr.contains("panicked"), "{case}: {stderr}");
            match status.code() {
                Some(0) => resumed_whole(&case, &rows(env, &dir, stopped.rows), full),
                Some(2) => {
                    let last = stderr.lines().last().unwrap_or("");
                    assert!(
                        last.starts_with("error: ") && last.contains(file.as_str()),
                        "{case}: {stderr}"
                    );
                    // A number refused is named, with its field where the file has fields.
                    if how.starts_with("with") && file.ends_with(".json") {
                        let named = ["-1", "99999999999"].iter().any(|n| last.contains(n));
                        assert!(named, "{case}: the value is not named: {last}");
                    }
                    let now = std::fs::read_to_string(env.path(&dir).join(file)).unwrap();
                    assert_eq!(now, bad, "{case}: the damaged file was rewritten");
                    assert_eq!(
                        trial_files(env, &dir),
                        before,
                        "{case}: a trial's files changed"
                    );
                }
                _ => panic!("{case}: {status}: {stderr}"),
            }
        }
    }
}

/// Fails unless every trial of `resumed` settled, each completed one with its `full` value.
fn resumed_whole(case: &str, resumed: &Outcome, full: &Outcome) {
    for (trial, (status, _, value)) in resumed {
        assert!(
            ["completed", "pruned"].contains(&status.as_str()),
            "{case}: trial {trial} {status}"
        );
        if status == "completed" {
            let (a, b) = (value.unwrap(), full[trial].2.unwrap());
            assert!(
                (a - b).abs() < 1e-6,
                "{case}: trial {trial}: {a} against {b}"
            );
        }
    }
}

#[test]
fn a_damaged_search_file_is_refused_in_one_line_or_resumed_and_nothing_is_overwritten() {
    let env = Env::new();
    config(&env, "parallel = 2\nbudget = \"4GiB\"", LRS);
    let unpruned = ["--set", "sweep.prune.method=\"none\"", "--out", "full"];
    let args = [&["sweep", "--config", "search.toml"][..], &unpruned].concat();
    let (status, stderr) = tidemark(&env, &args, None);
    assert!(status.success(), "{stderr}");
    let full = outcome(&env, "full/small-sweep");
    // A search stopped with trials paused and running: every file it keeps is on disk.
    let args = ["sweep", "--config", "search.toml", "--out", "stopped"];
    let (status, stderr) = tidemark(&env, &args, Some(("ended:3:KILL", "count")));
    assert!(status.signal().is_some(), "{stderr}");
    let dir = env.path("stopped/small-sweep");
    // Its journal (its study: the trials, their epochs, their ends), and its one worker's
    // timeline, `schedule-<worker>.json`.
    let schedule = (std::fs::read_dir(&dir).unwrap().flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("schedule-") && n.ends_with(".json"))
        .expect("a packed worker's timeline");
    let names = ["plan.json", "journal.log", &schedule, "preflight.json"];
    let stopped = Stopped {
        files: search_files(&dir, &names),
        dir,
        resume: &["sweep", "--resume", "{dir}"],
        rows: "sweep.json",
    };
    resume_damaged(&env, "one", &stopped, &full);
}
