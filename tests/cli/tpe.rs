//! TPE (`[sweep] method = "tpe"`): the first trials are the random method's draws, later ones
//! are drawn from the trials finished before them as they start and written to `plan.json`;
//! one at a time, the same seed gives the same trials; in parallel, each draw is probed for its
//! lease; shards, which train apart, are refused.

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

fn plan(env: &Env, dir: &str) -> Value {
    let text = std::fs::read_to_string(env.path(dir).join("plan.json")).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["search"].clone()
}

fn sweep(env: &Env, out: &str, extra: &[&str]) -> Value {
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
    assert_eq!(
        first["trials"], again["trials"],
        "the same seed, the same trials"
    );
    // Eight trials start with four random ones (half, under 20), then four drawn by TPE.
    let drawn: Vec<u64> = first["tpe"]["drawn"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(drawn, [5, 6, 7, 8]);
    let values = |plan: &Value, i: usize| plan["trials"][i]["values"].clone();
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
        assert_eq!(
            row["values"]["train.lr"]
                .as_str()
                .unwrap()
                .parse::<f64>()
                .unwrap(),
            lr
        );
        assert!((1e-4..=1e-1).contains(&lr), "{lr}");
    }
    // Resumed, nothing is drawn or trained again.
    let resumed = env.run(&["sweep", "--resume", "a/small-sweep"]);
    assert_eq!(resumed.code(), 0, "{}", resumed.stderr());
    assert_eq!(plan(&env, "a/small-sweep")["trials"], first["trials"]);
}

#[test]
fn tpe_in_parallel_draws_each_trial_as_it_starts_under_its_lease() {
    let env = Env::new();
    search(&env);
    let par = sweep(&env, "p", &["--parallel", "2"]);
    assert_eq!(par["tpe"]["drawn"].as_array().unwrap().len(), 4);
    let text = std::fs::read_to_string(env.path("p/small-sweep/sweep.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    for row in json["trials"].as_array().unwrap() {
        assert_eq!(row["status"], "completed", "{row}");
        assert!(row["lease_bytes"].as_u64().unwrap() > 0, "{row}");
    }
}

#[test]
fn tpe_across_shards_is_refused_naming_the_method() {
    let env = Env::new();
    search(&env);
    let run = env.run(&["sweep", "--config", "tpe.toml", "--shard", "0/2"]);
    assert_eq!(run.code(), 2, "{}", run.stderr());
    assert!(
        run.stderr()
            .contains("sweep.method = \"tpe\" draws each trial from the results before it"),
        "{}",
        run.stderr()
    );
}
