use super::*;

fn space(text: &str) -> Result<Space, ConfigError> {
    let table: toml::Table = toml::from_str(text).unwrap();
    Space::from_table(&table["sweep"], "s.toml")
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
    assert_eq!((s.monitor.as_str(), s.mode), ("val_loss", MonitorMode::Min));
}

#[test]
fn random_draws_stay_in_range_and_repeat_from_the_seed() {
    let text = "[sweep]\nmethod = \"random\"\ntrials = 200\nseed = 3\nmonitor = \"val_accuracy\"\n\
                [sweep.vary]\ntrain.lr = { min = 1e-4, max = 1e-2, log = true }\n\
                train.batch_size = { min = 16, max = 64 }\n";
    let s = space(text).unwrap();
    assert_eq!(s.mode, MonitorMode::Max);
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
        ("[sweep]\nmethod = \"bayes\"\n[sweep.vary]\ntrain.lr = [1]\n", "sweep.method: must be \"grid\" or \"random\""),
        ("[sweep]\n[sweep.vary]\ntrain.lr = { min = 0.1, max = 1.0 }\n", "sweep.vary.train.lr: a range needs method = \"random\""),
        ("[sweep]\nmethod = \"random\"\n[sweep.vary]\ntrain.lr = [1]\n", "sweep.trials: method = \"random\" needs trials"),
        ("[sweep]\nmethod = \"random\"\ntrials = 2\n[sweep.vary]\ntrain.lr = { min = 0.0, max = 1.0, log = true }\n", "sweep.vary.train.lr: a log range needs min > 0"),
        ("[sweep]\n[sweep.vary]\ntrain.lr = []\n", "sweep.vary.train.lr: an empty list gives no trials"),
        ("[sweep]\ntrails = 3\n[sweep.vary]\ntrain.lr = [1]\n", "sweep.trails: unknown key"),
        ("[sweep]\nmonitor = \"loss\"\n[sweep.vary]\ntrain.lr = [1]\n", "sweep.monitor: must name a validation metric"),
        ("[sweep]\nmode = \"up\"\n[sweep.vary]\ntrain.lr = [1]\n", "sweep.mode: must be \"min\" or \"max\", got \"up\""),
        ("[sweep]\nmethod = 3\n[sweep.vary]\ntrain.lr = [1]\n", "sweep.method: must be \"grid\" or \"random\", got 3"),
    ];
    for (text, needle) in cases {
        let e = space(text).unwrap_err();
        assert!(
            e.to_string().starts_with(&format!("s.toml: {needle}")),
            "{e}"
        );
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
