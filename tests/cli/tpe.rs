//! TPE (`[sweep] method = "tpe"`): the first trials are the random method's draws, later ones
//! are drawn from the trials finished before them as they start, each recorded in the search's
//! journal with the trials it was drawn from (`tidemark:drawn_from`);
//! one at a time, the same seed gives the same trials; in parallel, each draw is probed for its
//! lease; across the tasks of a job array (shards), each draws from every task's results.

use serde_json::Value;

use super::{Env, SMALL};

fn search(env: &Env) {
    let text = format!(
        "{SMALL}\n[sweep]\nmethod = \"tpe\"\ntrials = 8\nseed = 3\nmonitor = \"val_loss\"\n\
         [sweep.vary]\ntrain.lr = {{ min = 1e-4, max = 1e-1, log = true }}\n\
         model.hidden = [[8], [32], [64, 64]]\n"
    );
    env.write("tpe.toml", &text);
}

/// The search in `dir`: each trial's values, by number (its row in `sweep.json`), and the
/// numbers TPE drew (those whose journal record says what they were drawn from).
fn plan(env: &Env, dir: &str) -> (Vec<Value>, Vec<u64>) {
    let text = std::fs::read_to_string(env.path(dir).join("sweep.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    let mut rows: Vec<(u64, Value)> = (json["trials"].as_array().unwrap().iter())
        .map(|r| (r["trial"].as_u64().unwrap(), r["values"].clone()))
        .collect();
    rows.sort_by_key(|r| r.0);
    let journal = std::fs::read_to_string(env.path(dir).join("journal.log")).unwrap();
    let mut drawn: Vec<u64> = (journal.lines())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|op| op["op_code"] == 4)
        .filter(|op| op["system_attrs"].get("tidemark:drawn_from").is_some())
        .map(|op| op["system_attrs"]["tidemark:trial"].as_u64().unwrap())
        .collect();
    drawn.sort_unstable();
    (rows.into_iter().map(|r| r.1).collect(), drawn)
}

fn sweep(env: &Env, out: &str, extra: &[&str]) -> (Vec<Value>, Vec<u64>) {
    let mut args = vec!["sweep", "--config", "tpe.toml", "--out", out];
    args.extend_from_slice(extra);
    let run = env.run(&args);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    plan(env, &format!("{out}/small-sweep"))
}

#[test]
fn tpe_starts_with_the_random_draws_then_draws_from_the_results_the_same_from_the_same_seed() {
    let env = Env::new();
    search(&env);
    let first = sweep(&env, "a", &[]);
    let again = sweep(&env, "b", &[]);
    let random = sweep(&env, "r", &["--set", "sweep.method=\"random\""]);
    assert_eq!(first.0, again.0, "the same seed, the same trials");
    // Eight trials start with four random ones (half, under 20), then four drawn by TPE.
    assert_eq!(first.1, [5, 6, 7, 8]);
    assert!(random.1.is_empty());
    let values = |plan: &(Vec<Value>, Vec<u64>), i: usize| plan.0[i].clone();
    for i in 0..4 {
        assert_eq!(
            values(&first, i),
            values(&random, i),
            "trial {} is random's",
            i + 1
        );
    }
    assert!((4..8).any(|i| values(&first, i) != values(&random, i)));
    // The rows show the values drawn, and every trial trained.
    let text = std::fs::read_to_string(env.path("a/small-sweep/sweep.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    for row in json["trials"].as_array().unwrap() {
        assert_eq!(row["status"], "completed", "{row}");
        let i = row["trial"].as_u64().unwrap() as usize - 1;
        let lr = values(&first, i)["train.lr"].as_f64().unwrap();
        assert_eq!(row["values"]["train.lr"].as_f64(), Some(lr));
        assert!((1e-4..=1e-1).contains(&lr), "{lr}");
    }
    // Resumed, nothing is drawn or trained again.
    let resumed = env.run(&["sweep", "--resume", "a/small-sweep"]);
    assert_eq!(resumed.code(), 0, "{}", resumed.stderr());
    assert_eq!(plan(&env, "a/small-sweep"), first);
    assert!(
        !resumed.stderr().contains("started"),
        "{}",
        resumed.stderr()
    );
}

#[test]
fn tpe_in_parallel_draws_each_trial_as_it_starts_under_its_lease() {
    let env = Env::new();
    search(&env);
    let par = sweep(&env, "p", &["--parallel", "2"]);
    assert_eq!(par.1.len(), 4);
    let text = std::fs::read_to_string(env.path("p/small-sweep/sweep.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    for row in json["trials"].as_array().unwrap() {
        assert_eq!(row["status"], "completed", "{row}");
        assert!(row["lease_bytes"].as_u64().unwrap() > 0, "{row}");
    }
}

/// Shards were refused a TPE search, which they split up front; they are workers of one study
/// now (whose TPE draws from every worker's results, `study::`), each trial trained once.
#[test]
fn tpe_across_shards_is_one_study_whose_every_trial_trains_once() {
    let env = Env::new();
    search(&env);
    let shard = |i: &str| {
        let run = env.run(&["sweep", "--config", "tpe.toml", "--shard", i]);
        assert_eq!(run.code(), 0, "{}", run.stderr());
        run
    };
    shard("0/2");
    // The study is done: the second shard joins it, finds nothing left, and trains nothing.
    let second = shard("1/2");
    let said = second.stderr();
    assert!(said.contains("joined study small (8 trials)"), "{said}");
    assert!(!said.contains("started"), "{said}");
    let journal = std::fs::read_to_string(env.path("runs/small-sweep/journal.log")).unwrap();
    let ops: Vec<Value> = journal
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let completed = ops
        .iter()
        .filter(|op| op["op_code"] == 6 && op["state"] == 1);
    assert_eq!(completed.count(), 8, "{journal}");
}

/// A hand-edited search record (the journal's `tidemark:search`, the plan a resume goes on
/// from) that breaks what the search takes for granted is refused on `--resume` with exit 2 and
/// one line naming the journal, the field and the value, and left as it is: a trial numbered 0
/// (it panicked with an index out of bounds), a TPE range with min above max (it panicked in
/// the estimator).
#[test]
fn a_damaged_search_record_is_refused_in_one_line_not_a_panic() {
    let env = Env::new();
    search(&env);
    let dir = "a/small-sweep";
    sweep(&env, "a", &["--set", "sweep.trials=3"]);
    let path = env.path(dir).join("journal.log");
    let journal = std::fs::read_to_string(&path).unwrap();
    let at = (journal.lines())
        .position(|l| l.contains("tidemark:search"))
        .unwrap();
    let edit = |change: &dyn Fn(&mut Value)| {
        let mut lines: Vec<String> = journal.lines().map(str::to_string).collect();
        let mut op: Value = serde_json::from_str(&lines[at]).unwrap();
        change(&mut op["system_attr"]["tidemark:search"]);
        lines[at] = op.to_string();
        let text = lines.join("\n") + "\n";
        std::fs::write(&path, &text).unwrap();
        text
    };
    type Edit<'a> = &'a dyn Fn(&mut Value);
    let cases: [(Edit, &str); 2] = [
        (
            &|s| s["trials"][0]["number"] = 0.into(),
            "trials[0].number is 0, where the plan's trials are numbered 1, 2, ... in order",
        ),
        (
            &|s| {
                let vary = s["tpe"]["vary"].as_array_mut().unwrap();
                let lr = vary.iter_mut().find(|v| v[0] == "train.lr").unwrap();
                lr[1]["range"]["min"] = 0.5.into();
            },
            "tpe.vary train.lr: min (0.5) must be below max (0.1)",
        ),
    ];
    for (change, says) in cases {
        let written = edit(change);
        let run = env.run(&["sweep", "--resume", dir]);
        run.fails_with(2, &["journal.log: tidemark:search of study small: ", says]);
        assert_eq!(run.stderr().trim().lines().count(), 1, "{}", run.stderr());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            written,
            "left as it is"
        );
    }
}
