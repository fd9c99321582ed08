//! The learning-rate finder over a hand loop: the loop's own epochs, run on a copy of its run,
//! give the curve the finder gives over `Trainer::fit` of the same task, to the bit.

use tidemark::record::Silent;
use tidemark::train::lr_find::{find, find_by_hand, rule::Sweep, Found};

use super::*;

/// A hand loop's epochs over `task`'s batches in the trainer's order (loader batches of 32,
/// two to a step), each step's error passed on (the finder ends the loop by refusing a step),
/// until epoch `until` if given.
fn epochs(run: &mut HandLoop<Small>, task: &Sines, until: Option<usize>) -> Result<(), Error> {
    let loader = tidemark::data::item_loader(task.data().train, SMALL.batch, Some(1), 0);
    let cx = run.compute();
    let device = run.device().clone();
    for epoch in run.epochs() {
        let batches: Vec<Vec<Item>> = loader.iter().collect::<Result<_, _>>().unwrap();
        for group in batches.chunks(SMALL.accumulation) {
            let sizes: Vec<usize> = group.iter().map(Vec::len).collect();
            let items: Vec<Item> = group.concat();
            run.step_batches(&sizes, |model, rows| {
                let batch = Rows.batch(items[rows].to_vec(), &device);
                task.step(model, batch, &cx)
            })?;
        }
        run.end_epoch(EpochFigures::default())?;
        if Some(epoch) == until {
            break;
        }
    }
    Ok(())
}

#[test]
fn the_finder_over_a_hand_loop_finds_what_it_finds_over_the_trainer() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    // 30 steps of the sweep over epochs of 4 steps: the copies run 8 epochs, the last cut.
    let mut sweep = Sweep::default();
    sweep.range.steps = 30;
    let config = |out: &str| sines_config(&dir.path().join(out), "sines", SMALL, &|b| b);
    let fitted = find(&config("fit"), sweep, Box::new(Silent), |run| {
        Trainer::from(run).fit(Sines)
    })
    .unwrap();
    let samples = Sines.data().train.len();
    let model = |d: &Device| Sines.model(d);
    let by_hand = find_by_hand(&config("hand"), sweep, samples, model, |run| {
        epochs(run, &Sines, None)
    })
    .unwrap();
    let curve = |found: &Found| -> Vec<(u64, u64)> {
        let points = found.points.iter();
        points.map(|p| (p.lr.to_bits(), p.loss.to_bits())).collect()
    };
    assert!(
        fitted.points.len() > sweep.skip_begin + 2,
        "{:?}",
        fitted.stopped
    );
    assert_eq!(
        curve(&by_hand),
        curve(&fitted),
        "every step's rate and loss, to the bit"
    );
    assert_eq!(by_hand.suggestion, fitted.suggestion);
    assert!(by_hand.lr().is_some());
    assert_eq!(by_hand.stopped, fitted.stopped);
    // The rates are the sweep's: exponential from 1e-8.
    for (i, point) in by_hand.points.iter().enumerate() {
        let rate = sweep.range.rate(i);
        assert!(
            (point.lr - rate).abs() <= 1e-12 * rate,
            "step {i}: {}",
            point.lr
        );
    }
    // Beside the run, not in it: lr-find.json and its picture, the copy's steps gone.
    let beside = dir.path().join("hand/sines-lr-find");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(beside.join("lr-find.json")).unwrap())
            .unwrap();
    assert_eq!(json["lr"].as_f64(), by_hand.lr());
    assert!(beside.join("lr-find.svg").is_file());
    assert!(
        !beside.join("steps").exists(),
        "the copy's steps are removed"
    );
    assert!(!dir.path().join("hand/sines").exists(), "no run directory");
}

#[test]
fn a_hand_loop_that_ends_before_the_sweep_ends_it_there() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let config = sines_config(dir.path(), "short", SMALL, &|b| b);
    let samples = Sines.data().train.len();
    let model = |d: &Device| Sines.model(d);
    // Three epochs of four steps, then the loop stops on its own.
    let found = find_by_hand(&config, Sweep::default(), samples, model, |run| {
        epochs(run, &Sines, Some(3))
    });
    let found = found.unwrap();
    assert_eq!(found.points.len(), 12);
    assert_eq!(found.stopped, "the loop ended after 12 steps");
    assert_eq!(
        found.suggestion, None,
        "no point between the skipped 10 and the last"
    );
}

#[test]
fn train_lr_find_is_carried_out_by_the_library_s_trainer_and_recorded_in_the_run() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let config = |name: &str, keys: &dyn Fn(ConfigBuilder) -> ConfigBuilder| {
        let builder = ConfigBuilder::new(name)
            .output_dir(dir.path())
            .epochs(2)
            .batch_size(32)
            .num_workers(0)
            .seed(1);
        keys(builder).build().unwrap()
    };
    let asked = config("asked", &|b| b.find_lr());
    assert!(asked.train.find_lr);
    let text = tidemark::config::to_toml(&asked);
    assert!(text.contains("lr = \"find\""), "written as asked: {text}");
    let messages = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let summary = Trainer::new(asked)
        .observer(Messages(std::sync::Arc::clone(&messages)))
        .fit(Sines)
        .unwrap();
    // The finder's own files, beside the run, and its line told to the trainer's observer.
    let found: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("asked-lr-find/lr-find.json")).unwrap(),
    )
    .unwrap();
    let lr = found["lr"].as_f64().expect("a suggestion");
    let said = messages.lock().unwrap().join("\n");
    assert!(said.contains("lr-find: suggested lr"), "{said}");
    // The run trained at that rate, and its config.toml records the rate, not "find".
    let written = std::fs::read_to_string(summary.run_dir.join("config.toml")).unwrap();
    let recorded = tidemark::config::parse(&written, "config.toml", &[]).unwrap();
    assert_eq!(
        (recorded.train.lr, recorded.train.find_lr),
        (lr, false),
        "{written}"
    );
    let at_rate = Trainer::new(config("at-rate", &|b| b.lr(lr)))
        .fit(Sines)
        .unwrap();
    let weights = |run: &str| {
        Checkpoint::latest(&dir.path().join(run))
            .unwrap()
            .weights()
            .unwrap()
    };
    assert_eq!(
        weights("asked"),
        weights("at-rate"),
        "the run is one at the rate found"
    );
    assert_eq!(summary.final_loss, at_rate.final_loss);
}

/// The messages a run tells.
struct Messages(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl tidemark::record::Observer for Messages {
    fn message(&mut self, text: &str) {
        self.0.lock().unwrap().push(text.to_string());
    }
}

/// Sets its flag at the `at`-th step it is told of: a stop asked mid-run, as a signal would.
struct StopAt {
    at: usize,
    seen: usize,
    flag: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl tidemark::record::Observer for StopAt {
    fn step_done(&mut self, _epoch: usize, _step: usize) {
        self.seen += 1;
        if self.seen == self.at {
            self.flag.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

#[test]
fn a_stop_during_train_lr_find_ends_the_finder_and_begins_no_run() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let config = sines_config(dir.path(), "stopped", SMALL, &|b| b.find_lr());
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let at = StopAt {
        at: 5,
        seen: 0,
        flag: std::sync::Arc::clone(&flag),
    };
    let error = Trainer::new(config)
        .observer(at)
        .stop_when(flag)
        .fit(Sines)
        .unwrap_err();
    assert!(matches!(error, Error::Interrupted), "{error}");
    // Neither the run nor the finder's copy is left behind.
    assert!(!dir.path().join("stopped").exists(), "no run directory");
    assert!(
        !dir.path().join("stopped-lr-find/steps").exists(),
        "the finder's copy is cleared"
    );
}
