//! Hand-edited records give exit 2 naming the file and the field, never a panic, an abort, or
//! a result made from them (issue 65): a population's exploit record naming a key the search
//! does not vary, none, or a member it does not have; a search record (the journal's plan)
//! whose method, population or quantile was edited; counts of trials no search runs; a checkpoint's state out of range.

use super::outside::tree;
use super::pbt::population;
use super::Env;

/// Each line of the file at `path` with `from` replaced by `to`; asserts one was.
fn edit(path: &std::path::Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{from} not in {}", path.display());
    std::fs::write(path, text.replace(from, to)).unwrap();
}

/// The one line of the file at `path` that holds `line` with `from` replaced by `to`; asserts
/// one was.
fn edit_line(path: &std::path::Path, line: &str, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<String> = (text.lines())
        .map(|l| match l.contains(line) {
            true => {
                assert!(l.contains(from), "{from} not in {l}");
                l.replace(from, to)
            }
            false => l.to_string(),
        })
        .collect();
    assert_eq!(
        text.lines().filter(|l| l.contains(line)).count(),
        1,
        "{line}"
    );
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn a_population_s_hand_edited_exploit_record_is_refused_naming_the_record() {
    let env = Env::new();
    population(&env, "");
    let run = env.run(&["sweep", "--config", "search.toml"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let whole = env.path("whole");
    super::resume::copy_dir(&env.path("runs/small-sweep"), &whole);
    let journal = std::fs::read_to_string(whole.join("journal.log")).unwrap();
    // The first exploit record's copier and the member it copied, as the journal has them.
    let record = (journal.lines())
        .find(|l| l.contains("tidemark:exploit:"))
        .unwrap();
    let value: serde_json::Value = serde_json::from_str(record).unwrap();
    let exploit = value["system_attr"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap();
    let from = format!("\"from\":{}", exploit["from"]);
    let lr = format!(
        "\"values\":{{\"train.lr\":{}}}",
        exploit["values"]["train.lr"]
    );
    let cases = [
        (
            lr.clone(),
            lr.replace("train.lr", "train.momentum"),
            "values sets train.momentum, where the search varies train.lr",
        ),
        (
            lr.clone(),
            "\"values\":{}".to_string(),
            "values sets no key, where the search varies train.lr",
        ),
        (
            from.clone(),
            "\"from\":99".to_string(),
            "from is 99, not another member of the population of 4",
        ),
    ];
    for (was, now, says) in cases {
        let dir = env.path("runs/small-sweep");
        std::fs::remove_dir_all(&dir).unwrap();
        super::resume::copy_dir(&whole, &dir);
        edit(&dir.join("journal.log"), &was, &now);
        let before = tree(env.dir.path());
        for args in [
            &["report", "runs/small-sweep"][..],
            &["report", "runs/small-sweep/journal.log"],
            &["sweep", "--resume", "runs/small-sweep"],
        ] {
            let said = [
                "runs/small-sweep/journal.log: ",
                "'s tidemark:exploit:",
                says,
            ];
            env.run(args).fails_with(2, &said);
            assert_eq!(tree(env.dir.path()), before, "{args:?} changed a file");
        }
    }
}

#[test]
fn a_hand_edited_search_record_is_refused_naming_the_journal_and_the_field() {
    let env = Env::new();
    population(&env, "");
    env.killed_at(&["sweep", "--config", "search.toml"], "ended:4");
    let stopped = env.path("stopped");
    super::resume::copy_dir(&env.path("runs/small-sweep"), &stopped);
    let cases = [
        (
            "\"method\":\"pbt\"",
            "\"method\":\"grid\"",
            "vary train.lr: a range, and method \"grid\" takes lists",
        ),
        (
            "\"method\":\"pbt\"",
            "\"method\":\"random\"",
            "method is \"random\", and pbt, a population's settings, goes with \"pbt\" alone",
        ),
        (
            "\"quantile\":0.25",
            "\"quantile\":0.9",
            "pbt.quantile: must be in (0, 0.5]",
        ),
        (
            "\"population\":4",
            "\"population\":7",
            "pbt.population is 7, and the plan has 4 trials",
        ),
        (
            "\"population\":4",
            "\"population\":1",
            "pbt.population: a population of 1 has no other member to copy",
        ),
        (
            "\"population\":4",
            "\"population\":4294967296",
            "pbt.population: must be at most 100000",
        ),
    ];
    for (was, now, says) in cases {
        let dir = env.path("runs/small-sweep");
        std::fs::remove_dir_all(&dir).unwrap();
        super::resume::copy_dir(&stopped, &dir);
        // The search as the journal keeps it, which a resume and a report go on from.
        edit_line(&dir.join("journal.log"), "tidemark:search", was, now);
        let before = tree(env.dir.path());
        for args in [
            &["sweep", "--resume", "runs/small-sweep"][..],
            &["report", "runs/small-sweep"],
        ] {
            let said = [
                "runs/small-sweep/journal.log: tidemark:search of study small: ",
                says,
            ];
            env.run(args).fails_with(2, &said);
            assert_eq!(
                tree(env.dir.path()),
                before,
                "{now}: {args:?} changed a file"
            );
        }
    }
}

#[test]
fn counts_no_search_runs_are_refused_before_anything_is_allocated() {
    let env = Env::new();
    population(&env, "");
    let cases = [
        (
            "sweep.pbt.population=4294967296",
            "sweep.pbt.population: must be at most 100000, got 4294967296",
        ),
        (
            "sweep.pbt.population=1",
            "sweep.pbt.population: a population of 1 has no other member to copy: none would \
             copy another",
        ),
    ];
    for (set, says) in cases {
        let out = env.run(&["sweep", "--config", "search.toml", "--set", set]);
        out.fails_with(2, &[says]);
    }
    let random = ["sweep.method=\"random\"", "sweep.trials=4294967296"];
    let text = std::fs::read_to_string(env.path("search.toml")).unwrap();
    let plain = text
        .replace("method = \"pbt\"\n", "")
        .replace("[sweep.pbt]\npopulation = 4\n", "");
    env.write("random.toml", &plain);
    let args = [
        "sweep",
        "--config",
        "random.toml",
        "--set",
        random[0],
        "--set",
        random[1],
    ];
    env.run(&args)
        .fails_with(2, &["sweep.trials: must be at most 100000, got 4294967296"]);
    let grid = [
        "sweep.method=\"grid\"",
        "sweep.vary.train.lr=[1,2,3,4,5,6,7,8,9,10,11]",
        "sweep.vary.train.batch_size=[1,2,3,4,5,6,7,8,9,10,11]",
        "sweep.vary.train.epochs=[1,2,3,4,5,6,7,8,9,10,11]",
        "sweep.vary.run.seed=[1,2,3,4,5,6,7,8,9,10,11]",
        "sweep.vary.train.weight_decay=[1,2,3,4,5,6,7,8,9,10,11]",
    ];
    let mut args = vec!["sweep", "--config", "random.toml"];
    for set in &grid {
        args.extend(["--set", set]);
    }
    let says = "sweep.vary: the grid's lists give 11 x 11 x 11 x 11 x 11 combinations, more \
                than the 100000 a search runs";
    env.run(&args).fails_with(2, &[says]);
}

#[test]
fn a_checkpoint_s_state_out_of_range_is_refused_before_an_epoch_trains() {
    let env = Env::small();
    assert_eq!(env.train_small("done", &["--quiet"]).code(), 0);
    let dir = env.path("runs/done/checkpoints/epoch-3");
    let cases = [
        (
            "\"layout_factor\": 1",
            "\"layout_factor\": 1, \"valid_micro_batch\": 0",
            "valid_micro_batch is 0",
        ),
        (
            "\"layout_factor\": 1",
            "\"layout_factor\": 3",
            "layout_factor is 3, where a shrink doubles it from 1",
        ),
        (
            "\"layout_factor\": 1",
            "\"layout_factor\": 0",
            "layout_factor is 0",
        ),
        (
            "\"step_in_epoch\": 0",
            "\"step_in_epoch\": 99999",
            "step_in_epoch is 99999, more than the run's steps",
        ),
        // Counts no run reaches, that would wrap as the run counts on.
        (
            "\"epoch\": 3",
            "\"epoch\": 18446744073709551615",
            "epoch is 18446744073709551615, more than 2^53, which no run counts to",
        ),
        (
            "\"step\": ",
            "\"step\": 1844674407370955",
            "step is 1844674407370955",
        ),
    ];
    let meta = std::fs::read_to_string(dir.join("meta.json")).unwrap();
    let manifest = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    for (was, now, says) in cases {
        std::fs::write(dir.join("meta.json"), meta.replace(was, now)).unwrap();
        // Listed at its new size, as a checkpoint written so would be.
        let size = std::fs::metadata(dir.join("meta.json")).unwrap().len();
        let listed = format!("\"meta.json\": {}", meta.len());
        let listed_now = format!("\"meta.json\": {size}");
        assert!(manifest.contains(&listed), "{manifest}");
        std::fs::write(
            dir.join("manifest.json"),
            manifest.replace(&listed, &listed_now),
        )
        .unwrap();
        let before = tree(env.dir.path());
        for args in [
            &["train", "--resume", "runs/done", "--set", "train.epochs=4"][..],
            &["evaluate", "runs/done"],
        ] {
            let out = env.run(args);
            out.fails_with(2, &["epoch-3/meta.json: not a checkpoint's state: ", says]);
            assert_eq!(
                tree(env.dir.path()),
                before,
                "{now}: {args:?} changed a file"
            );
        }
    }
}

/// A journal holding a trial no worker of its study made (a number outside the plan, a number
/// made twice, an unfinished trial of other keys) is refused, naming the trial: a worker
/// trained such a trial in place of the plan's, or waited for one it could never take over.
#[test]
fn a_journal_s_trial_that_no_worker_of_its_study_made_is_refused_naming_it() {
    let env = Env::new();
    let config = format!(
        "{}\n[sweep]\nmethod = \"random\"\ntrials = 2\n[sweep.vary]\ntrain.lr = {{ min = 1e-4, max = 1e-2, log = true }}\n",
        super::SMALL
    );
    env.write("random.toml", &config);
    let args = |journal: &str, out: &str| {
        let run = [
            "sweep",
            "--config",
            "random.toml",
            "--set",
            "train.epochs=1",
        ];
        let mut args: Vec<String> = run.iter().map(|s| s.to_string()).collect();
        args.extend([
            "--storage".into(),
            journal.into(),
            "--out".into(),
            out.into(),
        ]);
        args
    };
    let first = env.run(
        &args("j.log", "first")
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!(first.code(), 0, "{}", first.stderr());
    let journal = std::fs::read_to_string(env.path("j.log")).unwrap();
    // The study as its first worker made it, before any trial.
    let study: String = (journal.lines())
        .take_while(|l| !l.contains("\"op_code\":4"))
        .map(|l| format!("{l}\n"))
        .collect();
    // A trial as a worker makes it, renumbered, its worker a process that is gone.
    let made = journal
        .lines()
        .find(|l| l.contains("\"op_code\":4"))
        .unwrap();
    let number = made.split("\"tidemark:trial\":").nth(1).unwrap();
    let number = &number[..number.find(',').unwrap()];
    let trial = |n: u64| {
        let worker = made.split("\"tidemark:worker\":\"").nth(1).unwrap();
        let worker = &worker[..worker.find('"').unwrap()];
        made.replace(
            &format!("\"tidemark:trial\":{number},"),
            &format!("\"tidemark:trial\":{n},"),
        )
        .replace(worker, "ghost")
            + "\n"
    };
    let cases = [
        (
            trial(99),
            "trial 0 is numbered 99, not one of the plan's 1 to 2",
        ),
        (
            trial(1) + &trial(1),
            "trial 1 is numbered 1, which an earlier trial has",
        ),
        (
            trial(1).replace("train.lr", "model.dropout"),
            "trial 0 has the parameters [\"model.dropout\"], not the study's keys",
        ),
    ];
    for (i, (forged, says)) in cases.iter().enumerate() {
        let name = format!("k{i}.log");
        env.write(&name, &format!("{study}{forged}"));
        let out = format!("out{i}");
        let run = env.run(
            &args(&name, &out)
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        );
        run.fails_with(2, &[&format!("small in {name}: the journal's "), says]);
        let trained = std::fs::read_dir(env.path(&out).join("small-sweep"))
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with("trial-"))
                    .count()
            })
            .unwrap_or(0);
        assert_eq!(trained, 0, "{says}: a trial was trained");
    }
}
