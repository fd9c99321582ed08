//! A hand-written loop through `HandLoop` (setup, step, end_epoch, finish): the limit shrinks
//! its micro-batch and the run completes with the same effective batch; the run directory,
//! snapshots, checkpoints, `memory.svg` and `summary.json` are written for it; an epoch the loop
//! leaves open is ended by `finish`; `on_limit = "fit"` probes the loop's own step and trains
//! at the largest micro-batch that fits; a step past the last epoch is refused in one line.
//!
//! And a hand loop over a task's own batches, in the trainer's order, ends on the weights
//! `Trainer::fit` ends on, to the bit, with the same snapshots and memory figures: both loops
//! take their steps through the same calls.
//!
//! `keys`: one test per key that changes a step or an epoch's end, the two loops bit-equal.
//!
//! A binary of its own with tidemark's counting allocator (the limit is measured in host bytes
//! on flex).

use std::sync::Arc;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::{Dataset, InMemDataset};
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Tensor, TensorData};
use tidemark::config::{ConfigBuilder, MemorySize, OnLimit};
use tidemark::memory::CountingAllocator;
use tidemark::record::RunStatus;
use tidemark::task::{Compute, Splits, StepOutput, Task};
use tidemark::train::{Checkpoint, EpochFigures};
use tidemark::{Error, HandLoop, Trainer, TrainingError};

mod by_hand;
mod keys;
mod lr_find;
mod validation;

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator::new();

/// The allocator's count is the process's: one test at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

const WIDE: usize = 2048;

#[derive(Module, Debug)]
struct Net {
    hidden: Linear,
    out: Linear,
}

impl Net {
    fn new(device: &Device) -> Self {
        Self {
            hidden: LinearConfig::new(16, WIDE).init(device),
            out: LinearConfig::new(WIDE, 1).init(device),
        }
    }

    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.out.forward(relu(self.hidden.forward(x)))
    }
}

fn data(n: usize, device: &Device) -> (Tensor<2>, Tensor<2>) {
    let x: Vec<f32> = (0..n * 16)
        .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
        .collect();
    let y: Vec<f32> = x
        .chunks(16)
        .map(|r| r.iter().map(|v| v.sin()).sum())
        .collect();
    (
        Tensor::from_data(TensorData::new(x, [n, 16]), device),
        Tensor::from_data(TensorData::new(y, [n, 1]), device),
    )
}

/// Trains `epochs` epochs of batches of `batch` over `samples` samples, ending each epoch but
/// the last by hand (`finish` ends that one).
fn train(run: &mut HandLoop<Net>, batch: usize, samples: usize) -> Result<(), tidemark::Error> {
    let (x, y) = data(samples, run.device());
    let epochs = run.epochs();
    let last = *epochs.end();
    for epoch in epochs {
        for start in (0..samples).step_by(batch) {
            run.step(batch.min(samples - start), |model, part| {
                let at = start + part.start..start + part.end;
                let xb = x.clone().slice([at.clone(), 0..16]);
                let yb = y.clone().slice([at, 0..1]);
                (model.forward(xb) - yb).powi_scalar(2).mean()
            })?;
        }
        if epoch < last {
            run.end_epoch(EpochFigures::default())?;
        }
    }
    Ok(())
}

#[test]
fn a_hand_loop_shrinks_or_fits_under_its_limit_and_records_its_run() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let (batch, samples) = (4096, 8192);
    // A step at 4096 holds at least the hidden layer's input to the activation, its output and
    // the output's gradient: 3 x 4096 x 2048 x 4 B = 96 MiB, over an 80 MiB limit.
    let limit = 80u64 << 20;
    assert!(3 * batch as u64 * WIDE as u64 * 4 > limit);
    let config = ConfigBuilder::new("hand")
        .output_dir(dir.path())
        .epochs(2)
        .batch_size(batch)
        .memory_limit(MemorySize::Bytes(limit), OnLimit::Shrink)
        .build()
        .unwrap();
    let mut run = HandLoop::setup(config.clone(), samples, Net::new).unwrap();
    train(&mut run, batch, samples).unwrap();
    assert!(
        run.micro_batch() < batch,
        "the limit shrank the micro-batch"
    );
    let run_dir = run.run_dir().to_path_buf();
    // The loop left epoch 2 open: finish ends it, with its snapshot and checkpoint.
    let summary = run.finish().unwrap();
    assert_eq!(summary.status, RunStatus::Completed);
    assert_eq!((summary.epochs, summary.steps), (2, 4));
    assert!(summary.final_loss < summary.first_loss, "{summary:?}");
    for file in [
        "config.toml",
        "snapshots.jsonl",
        "memory.svg",
        "summary.json",
    ] {
        assert!(run_dir.join(file).is_file(), "{file}");
    }
    assert!(run_dir.join("checkpoints/epoch-2").is_dir());
    let snapshots = std::fs::read_to_string(run_dir.join("snapshots.jsonl")).unwrap();
    assert!(
        snapshots.contains("\"action\":\"shrink\""),
        "a shrink was recorded"
    );
    let config_toml = std::fs::read_to_string(run_dir.join("config.toml")).unwrap();
    assert!(!config_toml.contains("[model]") && config_toml.contains("[memory]"));

    // With "fit", the first step is probed at 4096 and halves of it, and the run trains at
    // the largest that fits: no breach, no shrink.
    let fit = ConfigBuilder::new("fit")
        .output_dir(dir.path())
        .epochs(1)
        .batch_size(batch)
        .memory_limit(MemorySize::Bytes(limit), OnLimit::Fit)
        .build()
        .unwrap();
    let mut run = HandLoop::setup(fit, samples, Net::new).unwrap();
    train(&mut run, batch, samples).unwrap();
    assert!(run.micro_batch() < batch, "fit chose a smaller micro-batch");
    let run_dir = run.run_dir().to_path_buf();
    assert_eq!(run.finish().unwrap().status, RunStatus::Completed);
    let snapshots = std::fs::read_to_string(run_dir.join("snapshots.jsonl")).unwrap();
    assert!(
        snapshots.contains("\"action\":\"fit\""),
        "a fit was recorded"
    );
    assert!(
        !snapshots.contains("\"action\":\"shrink\""),
        "and no breach"
    );
    // The probes are the fit's, before the epoch: its peak is its steps', under the limit, as
    // the trainer's is.
    let epoch: serde_json::Value = (snapshots.lines())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|s| s["event"] == "epoch" && s["epoch"] == 1)
        .unwrap();
    let peak = epoch["peak_bytes_in_use"].as_u64().unwrap();
    assert!(
        peak <= limit,
        "epoch 1's peak {peak} B over the {limit} B limit"
    );

    // A step past the last epoch is refused in one line.
    let small = ConfigBuilder::new("one")
        .output_dir(dir.path())
        .epochs(1)
        .batch_size(64);
    let mut run = HandLoop::setup(small.build().unwrap(), 128, Net::new).unwrap();
    train(&mut run, 64, 128).unwrap();
    run.end_epoch(EpochFigures::default()).unwrap();
    // An epoch ended twice: the same kind of error, naming the epoch.
    let again = run.end_epoch(EpochFigures::default()).unwrap_err();
    let without_step = TrainingError::EpochWithoutStep { epoch: 1 };
    assert!(
        matches!(&again, Error::Training(t) if *t == without_step),
        "{again}"
    );
    let device = run.device().clone();
    let e = run.step(64, |model, _| {
        model.forward(Tensor::zeros([1, 16], &device)).mean()
    });
    let e = e.unwrap_err();
    let after_last = TrainingError::StepAfterLastEpoch { epochs: 1 };
    assert!(matches!(&e, Error::Training(t) if *t == after_last), "{e}");
    assert_eq!(e.exit_code(), 4);
    // After a failed step the run goes no further.
    let after = run.end_epoch(EpochFigures::default()).unwrap_err();
    assert!(
        matches!(
            &after,
            Error::Training(TrainingError::AfterFailedStep { .. })
        ),
        "{after}"
    );
    let e = e.to_string();
    assert!(
        e.contains("a step after the run's last epoch (train.epochs = 1)"),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
}

/// A task of its own: y = sum(sin(x)) over 4 inputs, through a hidden layer of 16.
#[derive(Module, Debug)]
pub(crate) struct Small {
    hidden: Linear,
    out: Linear,
}

pub(crate) type Item = ([f32; 4], f32);

pub(crate) struct Rows;

impl Batcher<Item, (Tensor<2>, Tensor<2>)> for Rows {
    fn batch(&self, items: Vec<Item>, device: &Device) -> (Tensor<2>, Tensor<2>) {
        let n = items.len();
        let x: Vec<f32> = items.iter().flat_map(|(x, _)| *x).collect();
        let y: Vec<f32> = items.iter().map(|(_, y)| *y).collect();
        (
            Tensor::from_data(TensorData::new(x, [n, 4]), device),
            Tensor::from_data(TensorData::new(y, [n, 1]), device),
        )
    }
}

pub(crate) struct Sines;

/// Items `range` of y = sum(sin(x)) over 4 inputs in [-1, 1).
fn sines(range: std::ops::Range<usize>) -> Arc<dyn Dataset<Item>> {
    let items: Vec<Item> = range
        .map(|i| {
            let x = [0, 1, 2, 3].map(|k| ((i * 31 + k * 7) % 101) as f32 / 50.0 - 1.0);
            (x, x.iter().map(|v| v.sin()).sum())
        })
        .collect();
    Arc::new(InMemDataset::new(items))
}

impl Task for Sines {
    type Model = Small;
    type Item = Item;
    type Batch = (Tensor<2>, Tensor<2>);

    fn model(&self, device: &Device) -> Small {
        Small {
            hidden: LinearConfig::new(4, 16).init(device),
            out: LinearConfig::new(16, 1).init(device),
        }
    }
    fn data(&self) -> Splits<Item> {
        Splits::new(sines(0..200), Some(sines(200..240)))
    }
    fn batcher(&self) -> &dyn Batcher<Item, (Tensor<2>, Tensor<2>)> {
        &Rows
    }
    fn step(&self, model: &Small, (x, y): Self::Batch, cx: &Compute) -> StepOutput {
        let hidden = relu(model.hidden.forward(cx.input(x)));
        let predicted = cx.output(model.out.forward(hidden));
        StepOutput::new((predicted - y).powi_scalar(2).mean())
    }
}

/// Counts the steps a run reports done.
struct StepsDone(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl tidemark::record::Observer for StepsDone {
    fn step_done(&mut self, _epoch: usize, _step: usize) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The hand loop's epochs over `task`'s batches in the trainer's order (its loader: batches of
/// 32, two to an optimizer step), stopping without `finish` after epoch `stop`, if given.
fn hand_epochs(
    run: HandLoop<Small>,
    task: &Sines,
    stop: Option<usize>,
) -> Option<tidemark::record::RunSummary> {
    hand_epochs_scored(run, task, stop, false)
}

/// [`hand_epochs`], with each epoch validated (as the trainer validates: the validation split
/// in the run's precision, through `HandLoop::validate`) where `validate`, and the loop ended
/// where early stopping stops it.
fn hand_epochs_scored<T>(
    run: HandLoop<Small>,
    task: &T,
    stop: Option<usize>,
    validate: bool,
) -> Option<tidemark::record::RunSummary>
where
    T: Task<Model = Small, Item = Item, Batch = (Tensor<2>, Tensor<2>)>,
{
    let shape = Shape {
        batch: 32,
        accumulation: 2,
    };
    let cut = stop.map_or(Cut::Never, Cut::AfterEpoch);
    hand_run(run, task, shape, cut, validate)
}

/// A config `name` in `dir` of `shape`, 3 epochs, seed 1, with `keys` on.
fn sines_config(
    dir: &std::path::Path,
    name: &str,
    shape: Shape,
    keys: &impl Fn(ConfigBuilder) -> ConfigBuilder,
) -> tidemark::config::RunConfig {
    let builder = ConfigBuilder::new(name)
        .output_dir(dir)
        .epochs(3)
        .batch_size(shape.batch)
        .accumulation_steps(shape.accumulation)
        .num_workers(0)
        .seed(1);
    keys(builder).build().unwrap()
}

/// Sines' shape: batches of 32, two to a step.
const SMALL: Shape = Shape {
    batch: 32,
    accumulation: 2,
};

/// How the trainer batches a run: loader batches of `batch`, `accumulation` to a step.
#[derive(Clone, Copy)]
struct Shape {
    batch: usize,
    accumulation: usize,
}

/// Where a hand loop stops without `finish`, as a kill would stop it.
#[derive(Clone, Copy, PartialEq)]
enum Cut {
    Never,
    /// After this epoch's end.
    AfterEpoch(usize),
    /// After this many steps of the call.
    AfterStep(usize),
}

/// The hand loop's epochs over `task`'s batches as the trainer takes them under `shape`: the
/// loader's order, its batches grouped into steps and cut where the limit asks; stopped
/// without `finish` at `cut`; validated where `validate`; ended where early stopping stops
/// it. A resumed run passes over the steps its checkpoint had done.
fn hand_run<T>(
    mut run: HandLoop<Small>,
    task: &T,
    shape: Shape,
    cut: Cut,
    validate: bool,
) -> Option<tidemark::record::RunSummary>
where
    T: Task<Model = Small, Item = Item, Batch = (Tensor<2>, Tensor<2>)>,
{
    let seed = 1;
    let loader = tidemark::data::item_loader(task.data().train, shape.batch, Some(seed), 0);
    let cx = run.compute();
    let device = run.device().clone();
    // The loader reshuffles at each epoch's start: the epochs done are started again.
    for _ in 1..*run.epochs().start() {
        drop(loader.iter());
    }
    let mut done = run.steps_done_in_epoch();
    let mut step = 0;
    for epoch in run.epochs() {
        let batches: Vec<Vec<Item>> = loader.iter().collect::<Result<_, _>>().unwrap();
        for group in batches
            .chunks(shape.accumulation)
            .skip(std::mem::take(&mut done))
        {
            let sizes: Vec<usize> = group.iter().map(Vec::len).collect();
            let items: Vec<Item> = group.concat();
            run.step_batches(&sizes, |model, rows| {
                // The trainer's micro-batches: its loader batches, cut where the limit asks.
                let batch = Rows.batch(items[rows].to_vec(), &device);
                task.step(model, batch, &cx)
            })
            .unwrap();
            step += 1;
            if cut == Cut::AfterStep(step) {
                return None;
            }
        }
        let mut figures = EpochFigures::default();
        if validate {
            let valid: Vec<Item> = (task.data().valid.unwrap().iter())
                .collect::<Result<_, _>>()
                .unwrap();
            figures = run
                .validate(valid.len(), |model, rows| {
                    let batch = Rows.batch(valid[rows].to_vec(), &device);
                    task.valid_step(model, batch, &cx)
                })
                .unwrap();
        }
        run.end_epoch(figures).unwrap();
        if cut == Cut::AfterEpoch(epoch) {
            return None;
        }
        if run.stopped_early() {
            break;
        }
    }
    Some(run.finish().unwrap())
}

#[test]
fn a_hand_loop_over_a_task_s_batches_ends_on_the_weights_trainer_fit_ends_on() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let config = |name: &str| sines_config(dir.path(), name, SMALL, &|b| b);
    let fitted = Trainer::new(config("fit")).fit(Sines).unwrap();
    let task = Sines;
    let samples = task.data().train.len();
    let hand_config = config("hand");
    let run = HandLoop::setup(hand_config, samples, |d| task.model(d)).unwrap();
    let hand = hand_epochs(run, &task, None).unwrap();
    assert_eq!((hand.epochs, hand.steps), (fitted.epochs, fitted.steps));
    // Stopped after epoch 2 (as a kill after its checkpoint would), then resumed.
    let run = HandLoop::setup(config("cut"), samples, |d| task.model(d)).unwrap();
    assert!(hand_epochs(run, &task, Some(2)).is_none());
    let cut = dir.path().join("cut");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = StepsDone(std::sync::Arc::clone(&done));
    let run = HandLoop::resume_with(config("cut"), &cut, samples, |d| task.model(d), counted);
    let run = run.unwrap();
    assert_eq!(run.epochs(), 3..=3);
    let resumed = hand_epochs(run, &task, None).unwrap();
    assert_eq!(resumed.steps, fitted.steps);
    // The resumed loop reports its steps: the third epoch's, a third of the run's.
    let third = fitted.steps / 3;
    assert_eq!(done.load(std::sync::atomic::Ordering::SeqCst), third);
    let weights = |run: &str| {
        Checkpoint::latest(&dir.path().join(run))
            .unwrap()
            .weights()
            .unwrap()
    };
    assert_eq!(weights("cut"), weights("fit"), "resumed, the same weights");
    let (fit, hand_weights) = (weights("fit"), weights("hand"));
    assert_eq!(fit.len(), 4, "two layers' weights and biases");
    assert_eq!(fit, hand_weights, "the same weights, to the bit");
    let (a, b) = (hand.final_loss.unwrap(), fitted.final_loss.unwrap());
    assert!((a - b).abs() < 1e-6, "{a} against {b}");
    same_memory_figures(&dir.path().join("fit"), &dir.path().join("hand"));
    // The trained run scored again in one call: its final validation loss.
    let scored = tidemark::inference::evaluate_task(&dir.path().join("fit"), Sines).unwrap();
    let (a, b) = (scored.score.loss, fitted.final_val_loss.unwrap());
    assert_eq!(scored.score.samples, 40);
    assert!((a - b).abs() < 1e-6, "{a} against {b}");
    assert!(dir.path().join("fit/evaluation.json").is_file());
    // Predictions from the trained model in one call: their squared error over the
    // validation items is the run's last validation loss.
    let model = tidemark::inference::task_model(&dir.path().join("fit"), &Sines).unwrap();
    let valid = Sines.data().valid.unwrap();
    let items: Vec<Item> = valid.iter().collect::<Result<_, _>>().unwrap();
    let (x, y) = Rows.batch(items, &model.hidden.weight.device());
    let predicted = model.out.forward(relu(model.hidden.forward(x)));
    let mse: f32 = (predicted - y).powi_scalar(2).mean().into_scalar();
    let b = fitted.final_val_loss.unwrap();
    assert!((mse as f64 - b).abs() < 1e-5, "{mse} against {b}");
}

/// The snapshots of two runs of one config, `Trainer::fit`'s and a hand loop's: the same lines
/// (event, epoch, step, layout, step trace), and the same memory figures but for what is known
/// to differ between the two loops: the copies of the data's items each holds outside the
/// run's tensors. The hand loop holds an epoch's items collected and the group it steps; the
/// trainer its loader's items and its validation split: at most two copies of every item. The
/// bound is a count of items, not a share of the figures, which hold gemm's packing buffers
/// (one per thread, the size of the CPU's L2 cache: 1 MiB on one machine, 4 MiB on another).
fn same_memory_figures(fit: &std::path::Path, hand: &std::path::Path) {
    let items = Sines.data();
    let items = items.train.len() + items.valid.map_or(0, |v| v.len());
    let known = (2 * items * std::mem::size_of::<Item>()) as f64;
    let read = |dir: &std::path::Path| -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(dir.join("snapshots.jsonl")).unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let (fit, hand) = (read(fit), read(hand));
    let events = |lines: &[serde_json::Value]| -> Vec<String> {
        lines.iter().map(|l| l["event"].to_string()).collect()
    };
    assert_eq!(events(&hand), events(&fit));
    let near = |a: &serde_json::Value, b: &serde_json::Value, what: &str| {
        let (a, b) = (a.as_u64().unwrap() as f64, b.as_u64().unwrap() as f64);
        assert!(
            (a - b).abs() <= known,
            "{what}: hand loop {a} against trainer {b}, more apart than the {known} B of items \
             the two loops hold differently"
        );
    };
    for (h, f) in hand.iter().zip(&fit) {
        let at = format!("{} of epoch {}", f["event"], f["epoch"]);
        for key in ["epoch", "step", "micro_batch", "accumulation_steps"] {
            assert_eq!(h[key], f[key], "{key} at {at}");
        }
        near(
            &h["bytes_in_use"],
            &f["bytes_in_use"],
            &format!("in use at {at}"),
        );
        // The release's line is the one whose peak is not the run's: its window opens at the
        // hand loop's last checkpoint, with the model and the optimizer's state still held,
        // and after the trainer has dropped them with its loaders (tens of KiB here).
        if f["action"] != "cleanup" {
            near(
                &h["peak_bytes_in_use"],
                &f["peak_bytes_in_use"],
                &format!("peak at {at}"),
            );
        }
        let points = |l: &serde_json::Value| l["steps"].as_array().cloned().unwrap_or_default();
        let (hp, fp) = (points(h), points(f));
        assert_eq!(hp.len(), fp.len(), "step trace at {at}");
        for (h, f) in hp.iter().zip(&fp) {
            assert_eq!(h["step"], f["step"], "step trace at {at}");
            near(
                &h["peak"],
                &f["peak"],
                &format!("step {}'s peak", f["step"]),
            );
            near(
                &h["in_use"],
                &f["in_use"],
                &format!("step {}'s in use", f["step"]),
            );
        }
    }
}

/// A model whose parameters dwarf its activations: 2048 x 2048 (16 MiB a set).
#[derive(Module, Debug)]
struct Square {
    layer: Linear,
}

const SET: u64 = 2048 * 2048 * 4;

/// One epoch of one step over 2 samples, holding `held` bytes of the loop's own from after
/// `setup` on; returns the run's directory and the step's outcome.
fn one_step(
    dir: &std::path::Path,
    limit: Option<u64>,
    held: usize,
) -> (std::path::PathBuf, Result<f64, tidemark::Error>) {
    let mut config = ConfigBuilder::new("square")
        .output_dir(dir)
        .epochs(1)
        .batch_size(2);
    if let Some(limit) = limit {
        config = config.memory_limit(MemorySize::Bytes(limit), OnLimit::Fail);
    }
    let build = |d: &Device| Square {
        layer: LinearConfig::new(2048, 2048).init(d),
    };
    let mut run = HandLoop::setup(config.build().unwrap(), 2, build).unwrap();
    let device = run.device().clone();
    let own: Tensor<2> = Tensor::zeros([held / (2048 * 4), 2048], &device);
    let stepped = run.step(2, |model, rows| {
        let x: Tensor<2> = Tensor::ones([rows.len(), 2048], &device);
        model.layer.forward(x).mean()
    });
    let run_dir = run.run_dir().to_path_buf();
    drop(own);
    // After a failed step too: the summary says so, and nothing panics.
    let summary = run.finish().unwrap();
    assert_eq!(
        stepped.is_ok(),
        summary.status == RunStatus::Completed,
        "{summary:?}"
    );
    (run_dir, stepped)
}

#[test]
fn a_breach_in_a_hand_loop_s_update_is_caught() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    // What the process holds at the run's start (the weights, and what it held before), read
    // from an unlimited run's first snapshot.
    let (run_dir, stepped) = one_step(dir.path(), None, 0);
    stepped.unwrap();
    let start: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(run_dir.join("snapshots.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let at_start = start["bytes_in_use"].as_u64().unwrap();
    // The run's start expects its gradients and Adam's two moments to come: start + 3 sets.
    // The loop then holds a set of its own, so the step's backward holds start + 3 sets (its
    // own, the gradients, and the layer's backward's transient copy of the weights' size) and
    // the update start + 4 (its own, the gradients and the two moments). A limit at start +
    // 3.5 sets passes the run's start and the backward pass, and is breached in the update.
    let limit = at_start + 7 * SET / 2;
    let (_, stepped) = one_step(dir.path(), Some(limit), SET as usize);
    let e = stepped.unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, tidemark::Error::Limit(_)), "{text}");
    assert!(text.contains("in the optimizer's update"), "{text}");
}

#[test]
fn a_diverging_hand_loop_stops_with_the_step_and_keeps_finite_weights() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let config = ConfigBuilder::new("diverge")
        .output_dir(dir.path())
        .epochs(3)
        .batch_size(64)
        .optimizer(tidemark::config::OptimizerKind::Sgd, 1e30)
        .build()
        .unwrap();
    let mut run = HandLoop::setup(config, 256, Net::new).unwrap();
    let e = train(&mut run, 64, 256).unwrap_err();
    let Error::Training(TrainingError::Diverged { epoch, step, loss }) = e else {
        panic!("not a divergence: {e}");
    };
    assert!(!loss.is_finite(), "{loss}");
    assert!(epoch == 1 && step > 1, "epoch {epoch}, step {step}");
    assert_eq!(
        Error::Training(TrainingError::Diverged { epoch, step, loss }).exit_code(),
        4
    );
    // The weights never took the diverged step.
    let weights = tidemark::model::parameters(run.model());
    assert!(
        weights.iter().all(|w| w.is_finite()),
        "a weight is not finite"
    );
    // finish records the run as failed, with the divergence.
    let summary = run.finish().unwrap();
    let RunStatus::Failed(why) = &summary.status else {
        panic!("{:?}", summary.status);
    };
    assert!(
        why.starts_with("training diverged: loss is NaN at step"),
        "{why}"
    );
}

#[test]
fn early_stopping_in_a_hand_loop_stops_where_the_trainer_stops_and_keeps_the_best() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    // No epoch after the first improves by 10: patience 1 stops the run after epoch 2 of 4.
    let early = tidemark::config::EarlyStoppingConfig {
        patience: 1,
        min_delta: 10.0,
        ..Default::default()
    };
    let keys = |b: ConfigBuilder| b.epochs(4).early_stopping(early.clone());
    let config = |name: &str| sines_config(dir.path(), name, SMALL, &keys);
    let fitted = Trainer::new(config("fit")).fit(Sines).unwrap();
    assert!(fitted.stopped_early, "{fitted:?}");
    assert_eq!(fitted.best_epoch, Some(1));
    let task = Sines;
    let samples = task.data().train.len();
    let run = HandLoop::setup(config("hand"), samples, |d| task.model(d)).unwrap();
    let hand = hand_epochs_scored(run, &task, None, true).unwrap();
    assert!(hand.stopped_early, "{hand:?}");
    assert_eq!((hand.epochs, hand.steps), (fitted.epochs, fitted.steps));
    assert_eq!(
        (hand.best_epoch, hand.best_value),
        (fitted.best_epoch, fitted.best_value)
    );
    // restore_best: both end on epoch 1's weights, in checkpoints/best.
    let best = |run: &str| {
        let dir = dir.path().join(run);
        let best = Checkpoint::best(&dir).unwrap();
        let summary = tidemark::record::RunSummary::read(&dir).unwrap().unwrap();
        assert_eq!(summary.checkpoint.as_ref(), Some(&best.dir), "{run}");
        assert!(
            best.dir.ends_with("checkpoints/epoch-1"),
            "{run}: {:?}",
            best.dir
        );
        best.weights().unwrap()
    };
    assert_eq!(
        best("hand"),
        best("fit"),
        "the same best weights, to the bit"
    );
    // Stopped after epoch 1 and resumed, the loop keeps its patience and best: it stops
    // after epoch 2 again.
    let run = HandLoop::setup(config("cut"), samples, |d| task.model(d)).unwrap();
    assert!(hand_epochs_scored(run, &task, Some(1), true).is_none());
    let cut = dir.path().join("cut");
    let run = HandLoop::resume(config("cut"), &cut, samples, |d| task.model(d)).unwrap();
    let resumed = hand_epochs_scored(run, &task, None, true).unwrap();
    assert!(resumed.stopped_early);
    assert_eq!((resumed.epochs, resumed.best_epoch), (2, Some(1)));
    // A step after the stop is refused.
    let run = HandLoop::setup(config("again"), samples, |d| task.model(d)).unwrap();
    let mut run = run;
    let (x, y) = (
        Tensor::<2>::zeros([2, 4], run.device()),
        Tensor::<2>::zeros([2, 1], run.device()),
    );
    for epoch in 1..=2 {
        run.step(2, |m, _| {
            (m.out.forward(relu(m.hidden.forward(x.clone()))) - y.clone())
                .powi_scalar(2)
                .mean()
        })
        .unwrap();
        if epoch == 1 {
            // Figures without the monitor are refused in one line, and the epoch stays as
            // it was: the next end_epoch has its steps' loss.
            let e = run.end_epoch(EpochFigures::default()).unwrap_err();
            assert!(
                e.to_string().contains("train.early_stopping.monitor"),
                "{e}"
            );
        }
        let figures = EpochFigures {
            val_loss: Some(1.0),
            ..EpochFigures::default()
        };
        run.end_epoch(figures).unwrap();
    }
    assert!(run.stopped_early());
    let again = dir.path().join("again");
    let text = std::fs::read_to_string(again.join("snapshots.jsonl")).unwrap();
    let first: serde_json::Value = (text.lines())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|s| s["event"] == "epoch")
        .unwrap();
    assert!(first["loss"].as_f64().unwrap() > 0.0, "{first}");
    let e = run.step(2, |m, _| {
        m.out.forward(relu(m.hidden.forward(x.clone()))).mean()
    });
    let e = e.unwrap_err();
    assert!(
        matches!(
            &e,
            Error::Training(TrainingError::StepAfterEarlyStop { epoch: 2 })
        ),
        "{e}"
    );
    // Killed after the stop, before finish: resumed, it has no epoch left and finishes as
    // stopped early.
    drop(run);
    let run = HandLoop::resume(config("again"), &again, samples, |d| task.model(d)).unwrap();
    assert!(run.stopped_early());
    assert!(run.epochs().is_empty(), "{:?}", run.epochs());
    let summary = run.finish().unwrap();
    assert!(summary.stopped_early && summary.epochs == 2, "{summary:?}");
}

#[test]
fn a_hand_loop_in_bf16_ends_on_the_weights_trainer_fit_ends_on_with_and_without_fit() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    // Without a limit, and with `fit` under one the step fits in: twice the peak the run
    // without it measured (the probes then run first in both loops, in bf16, and pick the
    // configured micro-batch).
    let mut measured = None;
    for fit in [false, true] {
        let limit = measured.filter(|_| fit);
        let keys = |b: ConfigBuilder| {
            let b = b.epochs(2).precision(tidemark::config::Precision::Bf16);
            match limit {
                Some(bytes) => b.memory_limit(MemorySize::Bytes(bytes), OnLimit::Fit),
                None => b,
            }
        };
        let config = |name: &str| sines_config(dir.path(), &format!("{name}-{fit}"), SMALL, &keys);
        let fitted = Trainer::new(config("fit")).fit(Sines).unwrap();
        assert_eq!(fitted.limit_bytes, limit);
        measured = Some(2 * fitted.peak_bytes_in_use);
        let task = Sines;
        let samples = task.data().train.len();
        let run = HandLoop::setup(config("hand"), samples, |d| task.model(d)).unwrap();
        let hand = hand_epochs(run, &task, None).unwrap();
        assert_eq!(
            (hand.steps, hand.micro_batch),
            (fitted.steps, fitted.micro_batch)
        );
        let weights = |run: &str| {
            Checkpoint::latest(&dir.path().join(format!("{run}-{fit}")))
                .unwrap()
                .weights()
                .unwrap()
        };
        assert_eq!(
            weights("hand"),
            weights("fit"),
            "fit {fit}: the same weights in bf16"
        );
        let fitted_action = |run: &str| {
            let path = dir.path().join(format!("{run}-{fit}/snapshots.jsonl"));
            std::fs::read_to_string(path)
                .unwrap()
                .contains("\"action\":\"fit\"")
        };
        assert_eq!((fitted_action("hand"), fitted_action("fit")), (fit, fit));
    }
}

/// [`Sines`] with a metric: the mean absolute error of each batch.
struct SinesMae;

impl Task for SinesMae {
    type Model = Small;
    type Item = Item;
    type Batch = (Tensor<2>, Tensor<2>);

    fn model(&self, device: &Device) -> Small {
        Sines.model(device)
    }
    fn data(&self) -> Splits<Item> {
        Sines.data()
    }
    fn batcher(&self) -> &dyn Batcher<Item, (Tensor<2>, Tensor<2>)> {
        &Rows
    }
    fn step(&self, model: &Small, (x, y): Self::Batch, cx: &Compute) -> StepOutput {
        let hidden = relu(model.hidden.forward(cx.input(x)));
        let error = cx.output(model.out.forward(hidden)) - y;
        StepOutput::new(error.clone().powi_scalar(2).mean()).metric("mae", error.abs().mean())
    }
}

#[test]
fn a_hand_loop_s_step_metrics_are_the_trainer_s_train_metrics() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let config = |name: &str| sines_config(dir.path(), name, SMALL, &|b| b.epochs(2));
    Trainer::new(config("fit")).fit(SinesMae).unwrap();
    let task = SinesMae;
    let samples = task.data().train.len();
    let run = HandLoop::setup(config("hand"), samples, |d| task.model(d)).unwrap();
    hand_epochs_scored(run, &task, None, false).unwrap();
    let train_mae = |run: &str| -> Vec<f64> {
        let text = std::fs::read_to_string(dir.path().join(run).join("snapshots.jsonl")).unwrap();
        (text.lines())
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|s| s["event"] == "epoch")
            .map(|s| {
                s["train_mae"]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{run}: {s}"))
            })
            .collect()
    };
    let (hand, fit) = (train_mae("hand"), train_mae("fit"));
    assert_eq!(hand.len(), 2);
    for (a, b) in hand.iter().zip(&fit) {
        assert!((a - b).abs() < 1e-6, "train_mae {a} against {b}");
    }
}

#[test]
fn a_built_in_kind_s_bad_key_from_the_builder_is_refused_before_the_run_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let builder = tidemark::config::ConfigBuilder::new("bad")
        .output_dir(dir.path())
        .synthetic(64, 4, 2)
        .mlp(&[8])
        .dropout(1.5);
    // The config holds the kind's keys as set; the built-in kinds check them at once...
    let kinds = tidemark::kinds::Kinds::builtin();
    let error = (builder.clone())
        .build_checked(&|c| kinds.resolve(c))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "config: model.dropout must be in [0, 1), got 1.5"
    );
    // ... and the run does before it creates anything.
    let config = builder.build().unwrap();
    let error = tidemark::Trainer::new(config)
        .run()
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("model.dropout must be in [0, 1), got 1.5"),
        "{error}"
    );
    assert!(!dir.path().join("bad").exists(), "no run directory");
}

/// A run's `config.toml` whose `[model]` lacks a key its kind reads at its default (written by
/// a tidemark before the key existed, say) resumes: both sides are read through the kind.
/// A search started from code writes its `[model]` as a run does, defaults filled in.
#[test]
fn a_run_whose_config_lacks_a_model_key_at_its_default_resumes() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let config = |epochs: usize| {
        ConfigBuilder::new("older")
            .output_dir(dir.path())
            .synthetic(128, 4, 2)
            .mlp(&[8])
            .epochs(epochs)
            .batch_size(32)
            .num_workers(0)
            .build()
            .unwrap()
    };
    Trainer::new(config(1)).run().unwrap();
    let path = dir.path().join("older/config.toml");
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(written.contains("activation = \"relu\""), "{written}");
    std::fs::write(&path, written.replace("activation = \"relu\"\n", "")).unwrap();
    let resumed = Trainer::new(config(2))
        .resume(dir.path().join("older"))
        .run()
        .unwrap();
    assert_eq!(resumed.epochs, 2);
    // Another value is still refused, naming the key.
    let error = Trainer::new(
        ConfigBuilder::from_config(&config(3))
            .dropout(0.5)
            .build()
            .unwrap(),
    )
    .resume(dir.path().join("older"))
    .run()
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("model.dropout is 0.0 in the run's config.toml but 0.5 here"),
        "{error}"
    );

    let kinds = tidemark::kinds::Kinds::builtin();
    let mut sweep = config(1);
    sweep.run.name = "from-code".into();
    let (swept, _) =
        tidemark::sweep::sweep(&kinds, &sweep, 1, |_, _| Box::new(tidemark::record::Silent))
            .unwrap();
    let written = std::fs::read_to_string(swept.join("config.toml")).unwrap();
    assert!(written.contains("activation = \"relu\""), "{written}");
}

#[test]
fn a_hand_loop_under_a_device_budget_needs_a_limit_and_touches_nothing_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let config = ConfigBuilder::new("budgeted")
        .output_dir(dir.path())
        .epochs(1)
        .batch_size(2)
        .device_budget(MemorySize::Bytes(1 << 30), true)
        .build()
        .unwrap();
    let build = |d: &Device| Square {
        layer: LinearConfig::new(4, 4).init(d),
    };
    let Err(e) = HandLoop::setup(config, 2, build) else {
        panic!("a hand loop with no limit under a device budget was set up");
    };
    assert!(
        matches!(e, Error::Lease(tidemark::LeaseError::Budget { .. })),
        "{e}"
    );
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.to_string(),
        "memory.device_budget: a hand-written loop on host leases its memory.limit, and this \
         run sets none; set memory.limit to what it needs"
    );
    // Refused before the run directory is made.
    assert!(!dir.path().join("budgeted").exists());
}
