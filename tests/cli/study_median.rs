//! The median rule across a study's workers (`[sweep.prune] method = "median"` with
//! `--storage`): each trial is pruned against the median of every worker's completed trials
//! as the journal stood when it asked, in a worker's own process and in a packed worker's
//! children alike. Checked from the journal alone, read as Optuna replays it.

use serde_json::Value;

use super::study::{replay, workers, Replayed};
use super::{Env, SMALL};

/// The median rule with 3 completed trials before any is pruned, from epoch 1.
const MEDIAN: &str = "[sweep.prune]\nmethod = \"median\"\nstartup = 3";

/// A grid of 12 trials of 4 epochs (`[sweep]` keys `keys`): four that learn (lr 1e-2) first,
/// then eight that barely move (lr 1e-6), which the rule prunes once the first have completed
/// (workers take trials in order; in a packed worker, trial 5 starts when one has ended).
fn grid(env: &Env, keys: &str) {
    let good = (0..4).map(|i| format!("{}e-3", 10 + i));
    let bad = (1..=8).map(|i| format!("{i}e-6"));
    let rates: Vec<String> = good.chain(bad).collect();
    let text = format!(
        "{SMALL}\n[sweep]\nmethod = \"grid\"\nmonitor = \"val_loss\"\n{keys}\n{MEDIAN}\n\
         [sweep.vary]\ntrain.lr = [{}]\n",
        rates.join(", ")
    );
    let text = text.replace("samples = 1200", "samples = 600");
    env.write("study.toml", &text.replace("epochs = 3", "epochs = 4"));
}

/// What the journal's lines say of trial `id`: its `tidemark:reason` (a user attribute), and
/// the line of its end (the op that set a finished state).
fn reason_and_end(lines: &[Value], id: usize) -> (Option<String>, usize) {
    let of = |op: &&Value| op["trial_id"].as_u64() == Some(id as u64);
    let reason = (lines.iter().filter(of)).find_map(|op| {
        op["user_attr"]["tidemark:reason"]
            .as_str()
            .map(String::from)
    });
    let end = (lines.iter().enumerate())
        .find(|(_, op)| {
            of(op) && op["op_code"] == 6 && [1, 2, 3].contains(&op["state"].as_i64().unwrap())
        })
        .map(|(n, _)| n)
        .unwrap();
    (reason, end)
}

/// The median of `values`, as Optuna's pruner and tidemark take it.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n % 2 {
        1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// Asserts that every trial of the study of `n` trials of `epochs` epochs ended once,
/// completed or pruned by the rule: behind the median, at its last epoch, of the first
/// trials the journal completed (as many as its reason counts, at least the startup's 3, all
/// completed before its end), and that the rule pruned some and saved epochs.
fn pruned_by_the_rule(env: &Env, n: usize, epochs: usize) {
    let trials = replay(env);
    let text = std::fs::read_to_string(env.path("journal.log")).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(trials.len(), n);
    // The completed trials, in the order the journal completed them.
    let mut completed: Vec<(usize, &Replayed)> = (trials.iter().enumerate())
        .filter(|(_, t)| t.state == 1)
        .map(|(id, t)| (reason_and_end(&lines, id).1, t))
        .collect();
    completed.sort_by_key(|(end, _)| *end);
    let (mut pruned, mut across) = (0, 0);
    for (id, t) in trials.iter().enumerate() {
        assert_eq!(t.ends, 1, "trial {} ended once: {t:?}", t.number);
        let trained = t.intermediate.len() as i64;
        if t.state == 1 {
            assert_eq!(trained as usize, epochs, "{t:?}");
            continue;
        }
        assert_eq!(t.state, 2, "trial {} completed or pruned: {t:?}", t.number);
        pruned += 1;
        let (reason, end) = reason_and_end(&lines, id);
        let reason = reason.unwrap();
        // "median rule: its best val_loss so far, B, is behind the median M of K completed
        // trials at epoch E"
        let words: Vec<&str> = reason.split(' ').collect();
        let said = |i: usize| words[i].trim_end_matches(',');
        let (m, k, e): (f64, usize, i64) = (
            said(12).parse().unwrap(),
            said(14).parse().unwrap(),
            said(19).parse().unwrap(),
        );
        assert_eq!(e, trained, "pruned after its last epoch: {reason}");
        let before: Vec<f64> = (completed.iter())
            .filter(|(done, _)| *done < end)
            .map(|(_, c)| c.intermediate[&e])
            .collect();
        assert!(
            k >= 3 && k <= before.len(),
            "{reason}: {} completed before",
            before.len()
        );
        let exact = median(before[..k].to_vec());
        let owner = |t: &Replayed| t.system["tidemark:worker"].clone();
        let others = completed[..k].iter().filter(|(_, c)| owner(c) != owner(t));
        across += others.count();
        assert!(
            (exact - m).abs() < 5e-5,
            "{reason}: the median of the first {k} is {exact}"
        );
        let best = (1..=e).map(|s| t.intermediate[&s]).fold(f64::MAX, f64::min);
        assert!(best > exact, "{reason}: its best {best} is behind {exact}");
        assert_eq!(
            t.value,
            Some(t.intermediate[&e]),
            "pruned with its last value"
        );
    }
    assert!(pruned >= 1 && pruned < n, "{pruned} of {n} pruned");
    assert!(across > 0, "a median counted another worker's trials");
    let trained: usize = trials.iter().map(|t| t.intermediate.len()).sum();
    assert!(trained < n * epochs, "{trained} epochs");
}

#[test]
fn the_median_rule_prunes_against_every_worker_s_completed_trials() {
    let env = Env::new();
    grid(&env, "");
    workers(&env, 3, "journal.log");
    pruned_by_the_rule(&env, 12, 4);
    let report = env.run(&["report", "journal.log"]);
    assert!(report.stdout().contains("pruned"), "{}", report.stdout());
}

#[test]
fn packed_workers_children_prune_by_the_median_of_the_study() {
    let env = Env::new();
    grid(&env, "parallel = 2\nbudget = \"4GiB\"");
    workers(&env, 2, "journal.log");
    pruned_by_the_rule(&env, 12, 4);
    // Every trial was trained in a child, from its launch file.
    let launched = (0..2)
        .flat_map(|w| std::fs::read_dir(env.path(&format!("out-{w}/small-sweep/launch"))).unwrap())
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "toml")
        })
        .count();
    assert_eq!(launched, 12);
}
