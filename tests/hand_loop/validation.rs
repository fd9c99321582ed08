//! A breach of the limit during validation: under `on_limit = "shrink"` validation runs again
//! at half its micro-batch (recorded as a `shrink`, training keeping its own), and where even a
//! micro-batch of 1 holds too much the error says why without advising the setting already
//! set; under `"fail"` the run fails at the epoch's end and the error advises `"shrink"`.

use burn::data::dataloader::batcher::Batcher;
use burn::tensor::{Device, Tensor};
use tidemark::config::{ConfigBuilder, MemorySize, OnLimit};
use tidemark::task::{Compute, Splits, StepOutput, Task};
use tidemark::{Error, Trainer};

use super::{serial, Item, Rows, Sines, Small};

/// Sines, whose validation holds `per_sample` floats a sample and `fixed` floats besides, on
/// top of the training step's figures: validation is what breaches. Each validation batch
/// takes `pause_ms` more.
struct WideValidation {
    per_sample: usize,
    fixed: usize,
    pause_ms: u64,
}

impl Task for WideValidation {
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
    fn step(&self, model: &Small, batch: Self::Batch, cx: &Compute) -> StepOutput {
        Sines.step(model, batch, cx)
    }
    fn valid_step(&self, model: &Small, (x, y): Self::Batch, cx: &Compute) -> StepOutput {
        std::thread::sleep(std::time::Duration::from_millis(self.pause_ms));
        let device = x.device();
        let wide = x
            .clone()
            .matmul(Tensor::ones([4, self.per_sample / 4], &device));
        let fixed = Tensor::<2>::ones([self.fixed / 1024, 1024], &device);
        let held = (wide.sum() + fixed.sum()).mul_scalar(0.0);
        let out = Sines.step(model, (x, y), cx);
        StepOutput::new(out.loss + held)
    }
}

fn config(
    dir: &std::path::Path,
    name: &str,
    limit: Option<(u64, OnLimit)>,
) -> tidemark::config::RunConfig {
    let builder = ConfigBuilder::new(name)
        .output_dir(dir)
        .epochs(2)
        .batch_size(32)
        .num_workers(0)
        .seed(1);
    let builder = match limit {
        Some((bytes, on_limit)) => builder.memory_limit(MemorySize::Bytes(bytes), on_limit),
        None => builder,
    };
    builder.build().unwrap()
}

fn snapshots(dir: &std::path::Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name).join("snapshots.jsonl")).unwrap()
}

#[test]
fn a_breach_in_validation_shrinks_validation_under_shrink_and_says_why_where_it_cannot() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    // 16 Ki floats a sample: 2 MiB more at a validation micro-batch of 32 than at 16.
    let task = || WideValidation {
        per_sample: 64 << 10,
        fixed: 0,
        pause_ms: 0,
    };
    let free = Trainer::new(config(dir.path(), "free", None))
        .fit(task())
        .unwrap();
    let peak = free.peak_bytes_in_use;
    // Between validation at 32 and at 16, well above training's.
    let limit = peak - (1 << 20);

    let shrunk = Trainer::new(config(dir.path(), "shrink", Some((limit, OnLimit::Shrink))))
        .fit(task())
        .unwrap();
    assert_eq!(shrunk.micro_batch, 32, "training keeps its micro-batch");
    assert!(
        shrunk.peak_bytes_in_use > limit,
        "the breached attempt is in the peak"
    );
    let lines = snapshots(dir.path(), "shrink");
    let shrinks: Vec<&str> = (lines.lines())
        .filter(|l| l.contains("\"action\":\"shrink\""))
        .collect();
    assert_eq!(
        shrinks.len(),
        1,
        "one shrink, in epoch 1; epoch 2 validates at 16: {lines}"
    );
    assert!(
        shrinks[0].contains("validation held") && shrinks[0].contains("runs again at 16"),
        "{}",
        shrinks[0]
    );
    assert_eq!(
        free.final_val_loss, shrunk.final_val_loss,
        "the same figures at 16"
    );
    // Cut after epoch 1 and resumed: the checkpoint keeps validation's micro-batch, so the
    // resumed epoch validates at 16 at once, as the uninterrupted run did, with no shrink.
    let limited = Some((limit, OnLimit::Shrink));
    let mut first = config(dir.path(), "cut", limited);
    first.train.epochs = 1;
    Trainer::new(first).fit(task()).unwrap();
    let resumed = Trainer::new(config(dir.path(), "cut", limited))
        .resume(dir.path().join("cut"))
        .fit(task())
        .unwrap();
    assert_eq!(resumed.final_val_loss, shrunk.final_val_loss);
    let lines = snapshots(dir.path(), "cut");
    let after = lines
        .split("\"event\":\"resume\"")
        .nth(1)
        .expect("a resume event");
    assert!(!after.contains("\"action\":\"shrink\""), "{lines}");

    let failed = Trainer::new(config(dir.path(), "fail", Some((limit, OnLimit::Fail))))
        .fit(task())
        .unwrap_err();
    let Error::Limit(e) = &failed else {
        panic!("{failed}")
    };
    assert_eq!(e.phase, tidemark::memory::Phase::EpochEnd, "{failed}");
    assert!(
        failed.to_string().contains("memory.on_limit = \"shrink\""),
        "{failed}"
    );

    // 8 MiB held whatever the micro-batch: no shrink fits, and the error says so.
    let fixed = || WideValidation {
        per_sample: 4,
        fixed: 2 << 20,
        pause_ms: 0,
    };
    let free = Trainer::new(config(dir.path(), "fixed-free", None))
        .fit(fixed())
        .unwrap();
    let limit = free.peak_bytes_in_use - (2 << 20);
    let failed = Trainer::new(config(dir.path(), "fixed", Some((limit, OnLimit::Shrink))))
        .fit(fixed())
        .unwrap_err();
    let message = failed.to_string();
    assert!(matches!(&failed, Error::Limit(e) if e.phase == tidemark::memory::Phase::EpochEnd));
    assert!(
        message.contains("at a micro-batch of 1 it still holds more"),
        "{message}"
    );
    assert!(
        !message.contains("(or memory.on_limit = \"shrink\")"),
        "{message}"
    );
    // What holds it is named, with its bytes: the largest category of its breakdown. That is
    // the 8 MiB a micro-batch of the task's validation holds, whatever its size, where gemm's
    // buffers (one per rayon worker, the size of the L2) are smaller, as on 2 workers of a
    // 2 MiB L2; on CI's 3 workers of 8 MiB, "other" is larger.
    let Error::Limit(limit) = &failed else {
        unreachable!("matched above")
    };
    let breakdown = limit.breakdown.as_ref().expect("a breakdown");
    let (largest, bytes) = breakdown.ranked()[0];
    let said = message.lines().last().unwrap();
    let named = format!("does): {}", breakdown.share(largest, bytes));
    assert!(said.contains(&named), "{named} not in {said}");
    assert!(said.contains(" holds the most of it; "), "{said}");
    assert!(said.contains("raise memory.limit"), "{said}");
    let mib = breakdown.activations as f64 / (1 << 20) as f64;
    assert!((8.0..9.0).contains(&mib), "activations {mib} MiB: {said}");
    let shrinks = snapshots(dir.path(), "fixed")
        .matches("\"action\":\"shrink\"")
        .count();
    assert_eq!(shrinks, 5, "32 -> 16 -> 8 -> 4 -> 2 -> 1");
}

/// An epoch's `samples_per_sec` is its steps' pace: from its first step's start to its last
/// step's end, without its validation (as the bench's bare-Burn loop and Keras time it).
/// Validation here takes at least a second an epoch (two batches, of 32 and 8, 500 ms each), so
/// an epoch timed with it could not reach 200 samples a second on its 200 training samples (its
/// steps take milliseconds).
#[test]
fn an_epoch_s_samples_per_second_is_its_steps_pace_not_its_validation() {
    let _one = serial();
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), "slow", None);
    cfg.train.epochs = 1;
    let slow = WideValidation {
        per_sample: 4,
        fixed: 0,
        pause_ms: 500,
    };
    Trainer::new(cfg).fit(slow).unwrap();
    let lines = snapshots(dir.path(), "slow");
    let epoch = (lines.lines())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|s| s["event"] == "epoch")
        .expect("an epoch snapshot");
    let pace = epoch["samples_per_sec"].as_f64().unwrap();
    assert!(pace > 200.0, "{pace} samples/s: validation timed in");
}
