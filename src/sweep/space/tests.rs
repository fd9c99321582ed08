use super::tpe::{draw_tpe, TPE_STARTUP};
use super::*;

/// The `[sweep]` table of config `text`, through both stages as `tidemark sweep` reads it.
fn space(text: &str) -> Result<Space, ConfigError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.toml");
    std::fs::write(&path, text).unwrap();
    let file = crate::config::load_raw(&path, &[])?;
    let raw = file.raw.sweep.as_ref().expect("a [sweep] table");
    Space::from_raw(raw).map_err(|e| file.error(&e.key, e.message))
}

#[test]
fn a_grid_runs_every_combination_with_the_last_key_fastest() {
    let s =
        space("[sweep]\n[sweep.vary]\ntrain.lr = [0.1, 0.01]\nmodel.hidden = [[4], [8], [16]]\n")
            .unwrap();
    assert_eq!(s.trials, 6);
    let trials = s.trials();
    assert_eq!(trials.len(), 6);
    assert_eq!(trials[0].describe(), "model.hidden = [4], train.lr = 0.1");
    assert_eq!(trials[1].describe(), "model.hidden = [4], train.lr = 0.01");
    assert_eq!(trials[5].describe(), "model.hidden = [16], train.lr = 0.01");
    assert_eq!(trials[5].name(), "trial-006");
    assert_eq!(
        (s.monitor.name(), s.monitor.mode()),
        ("val_loss", MonitorMode::Min)
    );
}

#[test]
fn random_draws_stay_in_range_and_repeat_from_the_seed() {
    let text = "[sweep]\nmethod = \"random\"\ntrials = 200\nseed = 3\nmonitor = \"val_accuracy\"\n\
                [sweep.vary]\ntrain.lr = { min = 1e-4, max = 1e-2, log = true }\n\
                train.batch_size = { min = 16, max = 64 }\n";
    let s = space(text).unwrap();
    assert_eq!(s.monitor.mode(), MonitorMode::Max);
    let trials = s.trials();
    assert_eq!(trials, space(text).unwrap().trials());
    let lrs: Vec<f64> = trials
        .iter()
        .map(|t| t.values["train.lr"].as_float().unwrap())
        .collect();
    assert!(lrs.iter().all(|lr| (1e-4..=1e-2).contains(lr)));
    // Log-uniform: about half the draws below the geometric middle, 1e-3.
    let low = lrs.iter().filter(|lr| **lr < 1e-3).count();
    assert!((70..130).contains(&low), "{low} of 200 below 1e-3");
    let sizes: Vec<i64> = trials
        .iter()
        .map(|t| t.values["train.batch_size"].as_integer().unwrap())
        .collect();
    assert!(sizes.iter().all(|b| (16..=64).contains(b)));
    let other = space(&text.replace("seed = 3", "seed = 4"))
        .unwrap()
        .trials();
    assert_ne!(trials, other);
}

#[test]
fn bad_tables_name_the_key() {
    let cases = [
        ("[sweep]\nmethod = \"bayes\"\n[sweep.vary]\ntrain.lr = [1]\n", "sweep.method: must be \"grid\", \"random\", \"tpe\" or \"pbt\", got \"bayes\""),
        ("[sweep]\n[sweep.vary]\ntrain.lr = { min = 0.1, max = 1.0 }\n", "sweep.vary.train.lr: a range needs method = \"random\", \"tpe\" or \"pbt\"; a grid takes a list"),
        ("[sweep]\nmethod = \"random\"\n[sweep.vary]\ntrain.lr = [1]\n", "sweep.trials: method = \"random\" needs trials"),
        ("[sweep]\nmethod = \"random\"\ntrials = 2\n[sweep.vary]\ntrain.lr = { min = 0.0, max = 1.0, log = true }\n", "sweep.vary.train.lr: a log range needs min > 0"),
        ("[sweep]\n[sweep.vary]\ntrain.lr = []\n", "sweep.vary.train.lr: an empty list gives no trials"),
        ("[sweep]\ntrails = 3\n[sweep.vary]\ntrain.lr = [1]\n", "unknown key sweep.trails (did you mean sweep.trials?)\n  expected one of method, trials, "),
        ("[sweep]\nmonitor = \"loss\"\n[sweep.vary]\ntrain.lr = [1]\n", "sweep.monitor: must name a validation metric"),
        ("[sweep]\nmode = \"up\"\n[sweep.vary]\ntrain.lr = [1]\n", "sweep.mode: must be \"min\" or \"max\", got \"up\""),
        ("[sweep]\nmethod = 3\n[sweep.vary]\ntrain.lr = [1]\n", "sweep.method: invalid type: integer `3`, expected a string"),
        ("[sweep]\nbudget = true\n[sweep.vary]\ntrain.lr = [1]\n", "sweep.budget: invalid type: boolean `true`, expected a size like \"512MiB\" or a fraction in (0, 1]"),
        ("[sweep]\nvary = [1]\n", "sweep.vary: invalid type: sequence, expected a table"),
        ("[sweep]\nmethod = \"tpe\"\n[sweep.vary]\ntrain.lr = [1]\n", "sweep.trials: method = \"tpe\" needs trials"),
        ("[sweep]\nmethod = \"tpe\"\ntrials = 0\n[sweep.vary]\ntrain.lr = [1]\n", "sweep.trials: must be >= 1, got 0"),
        ("[sweep]\ntrials = 4\n[sweep.vary]\ntrain.lr = [1]\n", "sweep.trials: a grid runs every combination of its lists; remove trials, or use method = \"random\" or \"tpe\""),
        ("[sweep]\n[sweep.vary]\nrun.name = [\"../x\", \"y\"]\n", "sweep.vary.run.name: cannot vary: each trial is named by the search"),
        ("[sweep]\n[sweep.vary]\nrun.output_dir = [\"/tmp/x\"]\n", "sweep.vary.run.output_dir: cannot vary: every trial runs in the search's directory"),
        ("[sweep]\n[sweep.vary]\nsweep.trials = [1, 2]\n", "sweep.vary.sweep.trials: cannot vary: [sweep] is the search's own table"),
        ("[sweep]\n[sweep.vary]\n\"train.lr\" = [1]\ntrain.lr = [2]\n", "sweep.vary.train.lr: is named twice (once as a quoted dotted key)"),
    ];
    for (text, needle) in cases {
        let e = space(text).unwrap_err();
        // Located at the key's line in the file, as a run's keys are.
        let (origin, message) = (e.origin.clone(), e.message.clone());
        assert!(origin.contains("s.toml:"), "{e}");
        assert!(message.starts_with(needle), "{e}");
        // One line, but for a list too long for it (the keys an unknown one could be).
        let headline = crate::config::headline(&message);
        assert!(headline.len() < 300 && message.lines().skip(1).all(|l| l.starts_with("  ")));
        assert_eq!(headline.len() < message.len(), needle.contains('\n'), "{e}");
    }
}

#[test]
fn order_is_largest_first_unless_listed() {
    let vary = "[sweep.vary]\ntrain.lr = [0.1, 0.01]\n";
    let order = |line: &str| space(&format!("[sweep]\n{line}\n{vary}")).map(|s| s.order);
    assert_eq!(order("").unwrap(), Order::LargestFirst);
    assert_eq!(order("order = \"listed\"").unwrap(), Order::Listed);
    let e = order("order = \"smallest\"").unwrap_err();
    assert_eq!(e.key.as_deref(), Some("sweep.order"));
    assert!(
        e.message
            .contains("must be \"largest_first\" or \"listed\", got \"smallest\""),
        "{}",
        e.message
    );
}

#[test]
fn tpe_is_parsed_with_trials_and_ranges() {
    let s = space(TPE).unwrap();
    assert_eq!((s.method, s.trials, s.seed), (Method::Tpe, 60, 5));
    assert_eq!(s.vary.len(), 3);
    assert!(matches!(
        s.vary[2].1,
        Domain::Range {
            log: true,
            int: false,
            ..
        }
    ));
    assert_eq!(s.tpe_startup(), TPE_STARTUP);
    let startup = |trials: usize| {
        Space {
            trials,
            ..s.clone()
        }
        .tpe_startup()
    };
    assert_eq!(
        [startup(20), startup(19), startup(7), startup(1)],
        [10, 10, 4, 1]
    );
}

/// A TPE search of three keys; `objective` is best (0) at lr 1e-3, batch size 32, hidden [64].
const TPE: &str = "[sweep]\nmethod = \"tpe\"\ntrials = 60\nseed = 5\n[sweep.vary]\n\
                   train.lr = { min = 1e-5, max = 1e-1, log = true }\n\
                   train.batch_size = { min = 8, max = 128, log = true }\n\
                   model.hidden = [[16], [64], [256, 256]]\n";

fn objective(values: &BTreeMap<String, toml::Value>) -> f64 {
    let lr = values["train.lr"].as_float().unwrap();
    let batch = values["train.batch_size"].as_integer().unwrap() as f64;
    let hidden = match literal(&values["model.hidden"]).as_str() {
        "[64]" => 0.0,
        _ => 4.0,
    };
    (lr.ln() - 1e-3f64.ln()).powi(2) + (batch.ln() - 32f64.ln()).powi(2) + hidden
}

/// Every trial of `s` in turn, each drawn from the results of those before it.
fn search(s: &Space, score: impl Fn(&BTreeMap<String, toml::Value>) -> f64) -> Vec<(Trial, f64)> {
    let mut done: Vec<(Trial, f64)> = Vec::new();
    for number in 1..=s.trials {
        let history: Vec<(&Trial, f64)> = done.iter().map(|(t, v)| (t, *v)).collect();
        let trial = s.tpe_trial(number, &history);
        assert_eq!(trial.number, number);
        let value = score(&trial.values);
        done.push((trial, value));
    }
    done
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let values: Vec<f64> = values.collect();
    values.iter().sum::<f64>() / values.len() as f64
}

#[test]
fn tpe_starts_with_the_random_draws_and_repeats_from_its_history() {
    let s = space(TPE).unwrap();
    let random = space(&TPE.replace("\"tpe\"", "\"random\"")).unwrap();
    assert_eq!(s.trials(), random.trials());
    let trials = random.trials();
    for t in &trials {
        assert_eq!(s.random_values(t.number), t.values);
    }
    let done = search(&s, objective);
    for (t, _) in &done[..s.tpe_startup()] {
        assert_eq!(t, &trials[t.number - 1]);
    }
    assert_ne!(done[s.tpe_startup()].0, trials[s.tpe_startup()]);
    // Trial 31 from the first 30 results: the same in any order (the results rounded, so that
    // ties split by trial order), and a new draw for another number or history.
    let history: Vec<(&Trial, f64)> = done[..30].iter().map(|(t, v)| (t, v.floor())).collect();
    let drawn = s.tpe_trial(31, &history);
    assert_eq!(drawn, s.tpe_trial(31, &history));
    let mut reversed = history.clone();
    reversed.reverse();
    assert_eq!(drawn, s.tpe_trial(31, &reversed));
    assert_ne!(drawn.values, s.tpe_trial(32, &history).values);
    assert_ne!(drawn.values, s.tpe_trial(31, &history[..29]).values);
    // Under 2 results, or within the startup, a trial is the random method's draw.
    assert_eq!(s.tpe_trial(31, &history[..1]).values, trials[30].values);
    assert_eq!(s.tpe_trial(4, &history).values, trials[3].values);
}

#[test]
fn tpe_concentrates_where_the_objective_is_low() {
    for seed in [0, 5, 11] {
        let s = space(&TPE.replace("seed = 5", &format!("seed = {seed}"))).unwrap();
        let done = search(&s, objective);
        let late = mean(done[40..].iter().map(|(_, v)| *v));
        let startup = mean(done[..s.tpe_startup()].iter().map(|(_, v)| *v));
        let random = mean(s.trials()[40..].iter().map(|t| objective(&t.values)));
        assert!(
            late < 0.4 * startup && late < 0.4 * random,
            "seed {seed}: trials 41..60 {late:.3}, startup {startup:.3}, random {random:.3}"
        );
        // Maximising the negated objective draws the same trials.
        let max = Space {
            monitor: Monitor::new("val_loss", Some(MonitorMode::Max)).unwrap(),
            ..s.clone()
        };
        let maximised = search(&max, |v| -objective(v));
        let trials = |d: &[(Trial, f64)]| d.iter().map(|(t, _)| t.clone()).collect::<Vec<_>>();
        assert_eq!(trials(&maximised), trials(&done), "seed {seed}");
    }
}

#[test]
fn tpe_draws_stay_in_their_domains() {
    let text = "[sweep]\nmethod = \"tpe\"\ntrials = 60\n[sweep.vary]\n\
                a = { min = -1.0, max = 2.0 }\nb = { min = 1e-4, max = 1e-1, log = true }\n\
                c = { min = -3, max = 3 }\nd = { min = 1, max = 1000, log = true }\n\
                e = [1, 2, 3]\nf = [[64], [128], [256, 256]]\n";
    let s = space(text).unwrap();
    let number = |v: &toml::Value| v.as_float().or(v.as_integer().map(|i| i as f64)).unwrap();
    // Pushed to the ends: a and d up, b and c down, and the last of e and f.
    let score = |v: &BTreeMap<String, toml::Value>| {
        let index = |key: &str| {
            let Domain::Values(values) = &s.vary.iter().find(|(k, _)| k == key).unwrap().1 else {
                unreachable!()
            };
            values.iter().position(|x| *x == v[key]).unwrap() as f64
        };
        -number(&v["a"]) + number(&v["b"]).ln() + number(&v["c"])
            - number(&v["d"]).ln()
            - index("e")
            - index("f")
    };
    let done = search(&s, score);
    // A result whose values the domains do not hold is left out.
    let mut foreign = done[0].0.clone();
    foreign.number = 61;
    for (key, value) in [
        ("a", 9.5.into()),
        ("c", 99.into()),
        ("f", toml::Value::from(vec![32])),
    ] {
        foreign.values.insert(key.into(), value);
    }
    let mut history: Vec<(&Trial, f64)> = done.iter().map(|(t, v)| (t, *v)).collect();
    history.push((&foreign, -1e9));
    let last = Trial {
        number: 62,
        values: draw_tpe(&s, 62, &history),
    };
    let mut cs = Vec::new();
    for t in done.iter().map(|(t, _)| t).chain([&last]) {
        assert!(
            (-1.0..=2.0).contains(&t.values["a"].as_float().unwrap()),
            "{t:?}"
        );
        assert!(
            (1e-4..=1e-1).contains(&t.values["b"].as_float().unwrap()),
            "{t:?}"
        );
        cs.push(t.values["c"].as_integer().unwrap());
        assert!(
            (1..=1000).contains(&t.values["d"].as_integer().unwrap()),
            "{t:?}"
        );
        for key in ["e", "f"] {
            let Domain::Values(values) = &s.vary.iter().find(|(k, _)| k == key).unwrap().1 else {
                unreachable!()
            };
            assert!(values.contains(&t.values[key]), "{t:?}");
        }
    }
    assert!(cs.iter().all(|c| (-3..=3).contains(c)), "{cs:?}");
    // TPE finds the ends: c's lowest integer, and e's last value, most of the time.
    let late = &done[40..];
    let count =
        |key: &str, value: toml::Value| late.iter().filter(|(t, _)| t.values[key] == value).count();
    assert!(count("c", (-3).into()) >= 10);
    assert!(count("e", 3.into()) >= 10);
}
