//! The journal is a search's state, so a journal that lost records is never read as "no value"
//! (issue 65): a population whose `journal.log` was emptied, removed, cut short, or lost a
//! member's value is refused by `sweep --resume` and by `report`, exit 2, naming the journal,
//! and neither decides anything nor rewrites a file.

use super::outside::tree;
use super::pbt::population;
use super::Env;

/// The ways a journal loses records, each done to the journal at `path`.
fn lose(how: &str, path: &std::path::Path) {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let kept: Vec<&str> = match how {
        "emptied" => Vec::new(),
        "removed" => return std::fs::remove_file(path).unwrap(),
        "cut in half" => lines[..lines.len() / 2].to_vec(),
        // A member's value at the interval: the decision would take it for none.
        "a value lost" => (lines.iter().copied())
            .filter(|l| !(l.contains("\"op_code\":7") && l.contains("\"trial_id\":1,")))
            .collect(),
        _ => unreachable!(),
    };
    let mut out = kept.join("\n");
    if !out.is_empty() {
        out.push('\n');
    }
    std::fs::write(path, out).unwrap();
}

const LOSSES: [(&str, &str); 4] = [
    (
        "emptied",
        "holds no record of this search, and its trial-001 and 3 more trained here",
    ),
    (
        "removed",
        "is missing, and its trial-001 and 3 more trained here",
    ),
    ("cut in half", "holds no record of trial-"),
    ("a value lost", "at epoch 1, which its snapshots.jsonl has"),
];

#[test]
fn a_population_whose_journal_lost_records_is_refused_naming_it_and_nothing_changes() {
    let env = Env::new();
    population(&env, "");
    // Stopped once every member paused at the first interval, before its decision.
    env.killed_at(&["sweep", "--config", "search.toml"], "ended:4");
    let stopped = env.path("stopped");
    super::resume::copy_dir(&env.path("runs/small-sweep"), &stopped);
    for (how, says) in LOSSES {
        let dir = env.path("runs/small-sweep");
        std::fs::remove_dir_all(&dir).unwrap();
        super::resume::copy_dir(&stopped, &dir);
        lose(how, &dir.join("journal.log"));
        let before = tree(env.dir.path());
        for args in [
            &["sweep", "--resume", "runs/small-sweep"][..],
            &["report", "runs/small-sweep"],
        ] {
            let out = env.run(args);
            out.fails_with(2, &["runs/small-sweep/journal.log: ", says, "restore it"]);
            assert_eq!(
                tree(env.dir.path()),
                before,
                "{how}: {args:?} changed a file"
            );
        }
    }
}

#[test]
fn the_report_of_a_population_whose_journal_was_emptied_keeps_its_lineage() {
    let env = Env::new();
    population(&env, "");
    let run = env.run(&["sweep", "--config", "search.toml"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let dir = env.path("runs/small-sweep");
    let sweep = std::fs::read(dir.join("sweep.json")).unwrap();
    assert!(String::from_utf8_lossy(&sweep).contains("\"copied\""));
    for (how, says) in LOSSES.into_iter().take(2) {
        let journal = std::fs::read(dir.join("journal.log")).unwrap();
        lose(how, &dir.join("journal.log"));
        env.run(&["report", "runs/small-sweep"])
            .fails_with(2, &["journal.log: ", says]);
        assert_eq!(
            std::fs::read(dir.join("sweep.json")).unwrap(),
            sweep,
            "{how}"
        );
        std::fs::write(dir.join("journal.log"), journal).unwrap();
    }
    // Restored, the same report.
    assert_eq!(env.run(&["report", "runs/small-sweep"]).code(), 0);
    assert_eq!(std::fs::read(dir.join("sweep.json")).unwrap(), sweep);
}
