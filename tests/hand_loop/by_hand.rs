//! The trainer's loop by hand, as docs/library.md shows it ("A task's loop by hand"): the
//! function below is the guide's, to the character (the first test checks), and it ends where
//! `Trainer::fit` ends, to the bit, in bf16 under a limit `fit` sizes the micro-batch to, and
//! killed and resumed with early stopping.

use std::path::Path;

use tidemark::config::{ConfigBuilder, MemorySize, OnLimit, Precision};
use tidemark::train::Checkpoint;
use tidemark::Trainer;

use super::{serial, Sines};

// --- the guide's function, from here ---
use tidemark::config::RunConfig;
use tidemark::data::item_loader;
use tidemark::record::RunSummary;
use tidemark::task::Task;
use tidemark::{Error, HandLoop};

/// `Trainer::fit(task)`'s run in a loop of your own, resumed from `resume` if given, or cut
/// (without `finish`, as a kill would) after epoch `until`.
fn by_hand<T: Task>(
    config: RunConfig,
    task: &T,
    resume: Option<&Path>,
    until: Option<usize>,
) -> Result<Option<RunSummary>, Error> {
    let data = task.data();
    let (batch, workers) = (config.train.batch_size, config.data.num_workers);
    let train = item_loader(data.train.clone(), batch, Some(config.run.seed), workers);
    let valid = (data.valid).map(|v| item_loader(v, batch, None, workers));
    let samples = data.train.len();
    let mut run = match resume {
        Some(dir) => HandLoop::resume(config, dir, samples, |d| task.model(d))?,
        None => HandLoop::setup(config, samples, |d| task.model(d))?,
    };
    for epoch in run.epochs() {
        for group in run.epoch_batches(train.as_ref()) {
            run.step_task(task, group?)?;
        }
        let figures = match &valid {
            Some(valid) => run.validate_task(task, valid.as_ref())?,
            None => Default::default(),
        };
        run.end_epoch(figures)?;
        if until == Some(epoch) {
            return Ok(None);
        }
        if run.stopped_early() {
            break;
        }
    }
    run.finish().map(Some)
}
// --- to here ---

/// The guide's function, as this file has it.
fn this_copy() -> &'static str {
    let text = include_str!("by_hand.rs");
    let start = text.find("use tidemark::config::RunConfig;").unwrap();
    let end = text.find("// --- to here ---").unwrap();
    &text[start..end]
}

#[test]
fn the_guide_s_loop_is_this_file_s_to_the_character() {
    let guide = include_str!("../../docs/library.md");
    assert!(
        guide.contains(this_copy()),
        "docs/library.md's \"A task's loop by hand\" and tests/hand_loop/by_hand.rs differ"
    );
    // Its calls into tidemark: HandLoop's opening (setup or resume), epochs, epoch_batches,
    // step_task, validate_task, end_epoch, stopped_early and finish, and the trainer's loader.
    let calls = [
        "HandLoop::resume(",
        "HandLoop::setup(",
        ".epochs()",
        ".epoch_batches(",
        ".step_task(",
        ".validate_task(",
        ".end_epoch(",
        ".stopped_early()",
        ".finish()",
        "item_loader(",
    ];
    for call in calls {
        assert!(this_copy().contains(call), "{call}");
    }
}

fn config(dir: &Path, name: &str, limit: Option<u64>) -> RunConfig {
    let early = tidemark::config::EarlyStoppingConfig {
        patience: 1,
        min_delta: 1e-3,
        ..Default::default()
    };
    let builder = ConfigBuilder::new(name)
        .output_dir(dir)
        .epochs(4)
        .batch_size(32)
        .accumulation_steps(2)
        .num_workers(0)
        .seed(1)
        .precision(Precision::Bf16)
        .early_stopping(early);
    let builder = match limit {
        Some(bytes) => builder.memory_limit(MemorySize::Bytes(bytes), OnLimit::Fit),
        None => builder,
    };
    builder.build().unwrap()
}

fn weights(dir: &Path) -> std::collections::BTreeMap<String, Vec<f32>> {
    Checkpoint::latest(dir).unwrap().weights().unwrap()
}

#[test]
fn the_guide_s_loop_ends_where_trainer_fit_ends_in_bf16_under_fit_and_resumed() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let free = Trainer::new(config(dir.path(), "free", None))
        .fit(Sines)
        .unwrap();
    // From a limit whose fit target (90% of it) is the unlimited run's peak, down in steps of
    // 0.5%: the first limit under which `fit` trains below the configured micro-batch of 32.
    let roomy = free.peak_bytes_in_use as f64 / 0.9;
    let mut chosen = None;
    for k in 0..60 {
        let limit = (roomy * (1.0 - 0.005 * k as f64)) as u64;
        let name = format!("fit-{k}");
        match Trainer::new(config(dir.path(), &name, Some(limit))).fit(Sines) {
            Ok(fitted) if fitted.micro_batch < 32 => {
                chosen = Some((limit, name, fitted));
                break;
            }
            Ok(_) => {}
            Err(e) => panic!("fit found no micro-batch under {limit} B: {e}"),
        }
    }
    let (limit, name, fitted) = chosen.expect("a limit under which fit halves the micro-batch");
    let hand = by_hand(config(dir.path(), "hand", Some(limit)), &Sines, None, None)
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            hand.micro_batch,
            hand.steps,
            hand.epochs,
            hand.stopped_early
        ),
        (
            fitted.micro_batch,
            fitted.steps,
            fitted.epochs,
            fitted.stopped_early
        ),
        "under {limit} B"
    );
    assert_eq!(
        weights(&dir.path().join("hand")),
        weights(&dir.path().join(&name))
    );
    assert_eq!(hand.final_val_loss, fitted.final_val_loss);
    eprintln!(
        "fit under {limit} B: micro-batch {} of 32 in both, {} steps, {} epochs",
        fitted.micro_batch, fitted.steps, fitted.epochs
    );

    // Cut after epoch 1 as a kill would, and resumed: the uninterrupted run's end.
    let cut = by_hand(
        config(dir.path(), "cut", Some(limit)),
        &Sines,
        None,
        Some(1),
    )
    .unwrap();
    assert!(cut.is_none());
    let resumed = by_hand(
        config(dir.path(), "cut", Some(limit)),
        &Sines,
        Some(&dir.path().join("cut")),
        None,
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        (resumed.steps, resumed.epochs),
        (fitted.steps, fitted.epochs)
    );
    assert_eq!(
        weights(&dir.path().join("cut")),
        weights(&dir.path().join(&name))
    );
}
