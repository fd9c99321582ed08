//! One test per key that changes a step or an epoch's end: `Trainer::fit` and a hand loop
//! over the same task, with the key on, end on the same weights, to the bit, after the same
//! steps at the same micro-batch, with the same memory actions and validation figures. Both
//! loops take their steps and end their epochs through the same calls (the learner's), so a
//! key cannot reach one and not the other.

use std::path::Path;

use tidemark::config::{ConfigBuilder, MemorySize, OnLimit, OptimizerKind};
use tidemark::record::RunSummary;

use super::*;

/// A hidden layer this wide, in loader batches of [`WIDE_BATCH`]: a step whose activations
/// (the hidden layer's output, its activation and their gradient: 3 x 1024 x 2048 x 4 B =
/// 24 MiB) dominate what it holds, for the limit's keys.
const WIDTH: usize = 2048;
const WIDE_BATCH: usize = 1024;

/// [`Sines`] through a hidden layer of [`WIDTH`], over 2048 training items.
struct WideSines;

impl Task for WideSines {
    type Model = Small;
    type Item = Item;
    type Batch = (Tensor<2>, Tensor<2>);

    fn model(&self, device: &Device) -> Small {
        Small {
            hidden: LinearConfig::new(4, WIDTH).init(device),
            out: LinearConfig::new(WIDTH, 1).init(device),
        }
    }
    fn data(&self) -> Splits<Item> {
        Splits::new(sines(0..2048), Some(sines(2048..2148)))
    }
    fn batcher(&self) -> &dyn Batcher<Item, (Tensor<2>, Tensor<2>)> {
        &Rows
    }
    fn step(&self, model: &Small, batch: Self::Batch, cx: &Compute) -> StepOutput {
        Sines.step(model, batch, cx)
    }
}

/// The activations' bytes of a [`WideSines`] step at its full micro-batch.
const WIDE_ACTIVATIONS: u64 = 3 * (WIDE_BATCH * WIDTH * 4) as u64;

/// [`WideSines`]' shape: batches of [`WIDE_BATCH`], one to a step.
const WIDE: Shape = Shape {
    batch: WIDE_BATCH,
    accumulation: 1,
};

/// Trains `task` with `keys` on by `Trainer::fit` (run `fit`) and by a hand loop (run
/// `hand`), and checks that they agree: the same weights to the bit, steps, micro-batch,
/// memory actions and validation loss. Returns both summaries.
fn both<T>(
    dir: &Path,
    task: impl Fn() -> T,
    shape: Shape,
    keys: impl Fn(ConfigBuilder) -> ConfigBuilder,
) -> (RunSummary, RunSummary)
where
    T: Task<Model = Small, Item = Item, Batch = (Tensor<2>, Tensor<2>)>,
{
    let fitted = Trainer::new(sines_config(dir, "fit", shape, &keys))
        .fit(task())
        .unwrap();
    let task = task();
    let samples = task.data().train.len();
    let hand = sines_config(dir, "hand", shape, &keys);
    let run = HandLoop::setup(hand, samples, |d| task.model(d)).unwrap();
    let hand = hand_run(run, &task, shape, Cut::Never, true).unwrap();
    agree(dir, &fitted, &hand, "hand");
    (fitted, hand)
}

/// Checks that run `other`'s `summary` agrees with run `fit`'s `fitted`.
fn agree(dir: &Path, fitted: &RunSummary, summary: &RunSummary, other: &str) {
    assert_eq!(summary.status, RunStatus::Completed, "{other}: {summary:?}");
    let shape = |s: &RunSummary| (s.epochs, s.steps, s.micro_batch, s.clipped_steps);
    assert_eq!(shape(summary), shape(fitted), "{other}: steps and layout");
    assert_eq!(summary.final_val_loss, fitted.final_val_loss, "{other}");
    assert_eq!(
        actions(&dir.join(other)),
        actions(&dir.join("fit")),
        "{other}"
    );
    assert_eq!(
        weights(&dir.join(other)),
        weights(&dir.join("fit")),
        "{other}: the same weights, to the bit"
    );
}

/// The final weights of the run in `run_dir` (its latest checkpoint).
fn weights(run_dir: &Path) -> std::collections::BTreeMap<String, Vec<f32>> {
    Checkpoint::latest(run_dir).unwrap().weights().unwrap()
}

/// The memory actions a run's snapshots record, with their epochs, in order.
fn actions(run_dir: &Path) -> Vec<(String, u64)> {
    let text = std::fs::read_to_string(run_dir.join("snapshots.jsonl")).unwrap();
    (text.lines())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter_map(|s| {
            let action = s["action"].as_str()?.to_string();
            Some((action, s["epoch"].as_u64().unwrap()))
        })
        .collect()
}

/// The peak a [`WideSines`] run measures without a limit (the trainer's), for limits that
/// hold or bind.
fn wide_peak(dir: &Path) -> u64 {
    let keys = |b: ConfigBuilder| b.epochs(1);
    let free = Trainer::new(sines_config(dir, "free", WIDE, &keys))
        .fit(WideSines)
        .unwrap();
    free.peak_bytes_in_use
}

#[test]
fn gradient_checkpointing_is_the_same_in_both_loops() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    both(
        dir.path(),
        || Sines,
        SMALL,
        |b| b.gradient_checkpointing(true),
    );
}

#[test]
fn clipping_is_the_same_in_both_loops() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let (fitted, _) = both(dir.path(), || Sines, SMALL, |b| b.clip_grad_norm(0.05));
    assert!(fitted.clipped_steps > 0, "the norm clips: {fitted:?}");
}

/// Offload moves what a device holds to host memory: on a device with memory of its own
/// (wgpu; on flex, whose tensors are in host memory already, the key is refused). Built with
/// `cargo test --features wgpu`; without an adapter it is skipped, unless
/// `TIDEMARK_REQUIRE_WGPU=1` (as in CI).
#[cfg(feature = "wgpu")]
#[test]
fn offload_to_host_memory_is_the_same_in_both_loops() {
    use tidemark::config::{Backend, DeviceConfig, Offload};
    let wgpu = DeviceConfig {
        backend: Backend::Wgpu,
        index: 0,
        execution: None,
    };
    if let Err(e) = tidemark::backend::select(&wgpu) {
        let required = std::env::var_os("TIDEMARK_REQUIRE_WGPU").is_some();
        assert!(
            !required,
            "TIDEMARK_REQUIRE_WGPU is set but no wgpu adapter: {e}"
        );
        eprintln!("skipped: {e}");
        return;
    }
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let host = |b: ConfigBuilder| {
        b.device(Backend::Wgpu, 0)
            .offload_gradients(Offload::Host)
            .offload_optimizer(Offload::Host)
    };
    both(dir.path(), || Sines, SMALL, host);
}

#[test]
fn a_limit_that_holds_under_on_limit_fail_is_the_same_in_both_loops() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let limit = 2 * wide_peak(dir.path());
    let fitted = under_a_limit(dir.path(), limit, OnLimit::Fail);
    assert_eq!(fitted.limit_bytes, Some(limit));
    assert_eq!(fitted.micro_batch, WIDE_BATCH);
}

/// A limit a quarter of the activations under the peak without one: the full micro-batch
/// breaches it, half of it fits.
fn binding_limit(dir: &Path) -> u64 {
    wide_peak(dir) - WIDE_ACTIVATIONS / 4
}

/// [`WideSines`] under `limit` with `on_limit`, in both loops ([`both`]): the trainer's summary.
fn under_a_limit(dir: &Path, limit: u64, on_limit: OnLimit) -> RunSummary {
    let keys = move |b: ConfigBuilder| b.memory_limit(MemorySize::Bytes(limit), on_limit);
    both(dir, || WideSines, WIDE, keys).0
}

#[test]
fn a_limit_that_shrinks_the_micro_batch_is_the_same_in_both_loops() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let limit = binding_limit(dir.path());
    let fitted = under_a_limit(dir.path(), limit, OnLimit::Shrink);
    assert!(fitted.micro_batch < WIDE_BATCH, "{fitted:?}");
    assert!(actions(&dir.path().join("fit")).contains(&("shrink".into(), 1)));
}

#[test]
fn a_limit_the_micro_batch_is_fitted_to_is_the_same_in_both_loops() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let limit = binding_limit(dir.path());
    let fitted = under_a_limit(dir.path(), limit, OnLimit::Fit);
    assert!(fitted.micro_batch < WIDE_BATCH, "{fitted:?}");
    let actions = actions(&dir.path().join("fit"));
    assert!(actions.contains(&("fit".into(), 0)), "{actions:?}");
    assert!(!actions.iter().any(|(a, _)| a == "shrink"), "{actions:?}");
}

#[test]
fn checkpoints_every_few_steps_are_the_same_in_both_loops_and_resume_inside_an_epoch() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    // Sines has 4 steps an epoch: checkpoints after steps 3, 6 and 9, inside epochs 1 to 3.
    let every = |b: ConfigBuilder| b.checkpoint_every_steps(3);
    both(dir.path(), || Sines, SMALL, every);
    // Stopped after step 6 (the second of epoch 2, at its checkpoint), then resumed there.
    let task = Sines;
    let samples = task.data().train.len();
    let cut = sines_config(dir.path(), "cut", SMALL, &every);
    let run = HandLoop::setup(cut.clone(), samples, |d| task.model(d)).unwrap();
    assert!(hand_run(run, &task, SMALL, Cut::AfterStep(6), true).is_none());
    let run_dir = dir.path().join("cut");
    let latest = Checkpoint::latest(&run_dir).unwrap();
    assert!(
        latest.dir.ends_with("checkpoints/step-6"),
        "{:?}",
        latest.dir
    );
    assert_eq!(latest.state.step_in_epoch, 2);
    let run = HandLoop::resume(cut, &run_dir, samples, |d| task.model(d)).unwrap();
    assert_eq!((run.epochs(), run.steps_done_in_epoch()), (2..=3, 2));
    let resumed = hand_run(run, &task, SMALL, Cut::Never, true).unwrap();
    let fitted = RunSummary::read(&dir.path().join("fit")).unwrap().unwrap();
    assert_eq!(resumed.steps, fitted.steps);
    assert_eq!(resumed.final_val_loss, fitted.final_val_loss);
    assert_eq!(weights(&run_dir), weights(&dir.path().join("fit")));
}

#[test]
fn the_divergence_check_stops_both_loops_in_the_same_epoch_on_the_same_weights() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let diverge = |b: ConfigBuilder| b.optimizer(OptimizerKind::Sgd, 1e30);
    let fitted = Trainer::new(sines_config(dir.path(), "fit", SMALL, &diverge)).fit(Sines);
    let Err(Error::Training(TrainingError::Diverged { epoch, step, .. })) = fitted else {
        panic!("not a divergence: {fitted:?}");
    };
    let task = Sines;
    let samples = task.data().train.len();
    let hand = sines_config(dir.path(), "hand", SMALL, &diverge);
    let mut run = HandLoop::setup(hand, samples, |d| task.model(d)).unwrap();
    let loader = tidemark::data::item_loader(task.data().train, 32, Some(1), 0);
    let (cx, device) = (run.compute(), run.device().clone());
    let batches: Vec<Vec<Item>> = loader.iter().collect::<Result<_, _>>().unwrap();
    let e = (batches.chunks(2))
        .map(|group| {
            let items = group.concat();
            run.step_batches(
                &[group[0].len(), items.len() - group[0].len()],
                |m, rows| task.step(m, Rows.batch(items[rows].to_vec(), &device), &cx),
            )
        })
        .find_map(Result::err)
        .expect("the loop diverges in its first epoch");
    let Error::Training(TrainingError::Diverged {
        epoch: hand_epoch,
        step: hand_step,
        ..
    }) = e
    else {
        panic!("not a divergence: {e}");
    };
    // The hand loop reads every step's loss; the trainer about once a second and at the
    // epoch's end: it stops at that read, no earlier.
    assert_eq!(hand_epoch, epoch);
    assert!(
        hand_step <= step,
        "hand loop at step {hand_step}, trainer at {step}"
    );
    let summary = run.finish().unwrap();
    assert!(
        matches!(summary.status, RunStatus::Failed(_)),
        "{summary:?}"
    );
    // Neither keeps a diverged model: both left checkpoint 0, the same weights.
    let (fit, hand) = (dir.path().join("fit"), dir.path().join("hand"));
    let latest = |run: &Path| Checkpoint::latest(run).unwrap().dir;
    assert!(latest(&fit).ends_with("checkpoints/epoch-0"));
    assert!(latest(&hand).ends_with("checkpoints/epoch-0"));
    assert_eq!(weights(&hand), weights(&fit));
}
