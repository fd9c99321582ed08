//! A hand-written training loop (the TF2 custom-training-loop and `GradientTape` style, or
//! Lightning Fabric's) that keeps tidemark's memory layer, early stopping and exact resume, in
//! seven calls into tidemark besides the model and the data: `HandLoop::setup`, `step_with`,
//! `validate`, `end_epoch`, `stopped_early`, `HandLoop::resume` and `finish`.
//!
//! `setup` makes the run directory and builds the model on the configured device; `step_with`
//! runs one optimizer step over a batch (its loss and a metric, `train_mae`), in the
//! micro-batches the memory limit allows (here a limit that a batch of 4096 breaches, with
//! `on_limit = "shrink"`: the step halves its micro-batch and runs again, keeping the
//! effective batch), with the update measured before and after; `validate` scores the model
//! in inference mode over the held-out rows, in the same micro-batches (`val_loss`,
//! `val_mae`); `end_epoch` takes those figures and writes the epoch's snapshot and checkpoint
//! (`checkpoints/best` where the loss improved); `stopped_early` says when
//! `[train.early_stopping]` has run out of patience. The loop stops after epoch 2 as a killed
//! run would, and `resume` goes on from its checkpoint, patience included; `finish` releases,
//! checks the release, and writes `memory.svg` and `summary.json`.
//!
//!     cargo run --release --example custom_loop [-- OUTPUT_DIR]

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Tensor, TensorData};
use tidemark::config::{ConfigBuilder, EarlyStoppingConfig, MemorySize, OnLimit};
use tidemark::memory::{format_bytes, CountingAllocator};
use tidemark::task::StepOutput;
use tidemark::HandLoop;

// Host memory accounting, as the `tidemark` binary has it: on flex the limit is measured in it.
#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator::new();

/// The loop's own model: x -> relu(W1 x) -> W2.
#[derive(Module, Debug)]
struct Net {
    hidden: Linear,
    out: Linear,
}

impl Net {
    fn new(device: &Device) -> Self {
        Self {
            hidden: LinearConfig::new(16, 2048).init(device),
            out: LinearConfig::new(2048, 1).init(device),
        }
    }

    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.out.forward(relu(self.hidden.forward(x)))
    }
}

/// `n` rows of 16 inputs and the target sum(sin(x)).
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

/// The loop: epochs of steps over `train`, each ended with its loss on `valid`, until early
/// stopping ends the run or, if given, after epoch `until`.
fn epochs(
    run: &mut HandLoop<Net>,
    (x, y): &(Tensor<2>, Tensor<2>),
    (xv, yv): &(Tensor<2>, Tensor<2>),
    until: Option<usize>,
) -> Result<(), tidemark::Error> {
    let (batch, samples) = (4096, x.dims()[0]);
    for epoch in run.epochs() {
        for start in (0..samples).step_by(batch) {
            let rows = batch.min(samples - start);
            run.step_with(rows, |model, part| {
                let at = start + part.start..start + part.end;
                let xb = x.clone().slice([at.clone(), 0..16]);
                let error = model.forward(xb) - y.clone().slice([at, 0..1]);
                // The loss, and a metric: `train_mae` in each epoch's snapshot.
                StepOutput::new(error.clone().powi_scalar(2).mean())
                    .metric("mae", error.abs().mean())
            })?;
        }
        // The model in inference mode over the held-out rows: `val_loss` and `val_mae`.
        let figures = run.validate(xv.dims()[0], |model, part| {
            let error = model.forward(xv.clone().slice([part.clone(), 0..16]))
                - yv.clone().slice([part, 0..1]);
            StepOutput::new(error.clone().powi_scalar(2).mean()).metric("mae", error.abs().mean())
        })?;
        run.end_epoch(figures)?;
        if run.stopped_early() || Some(epoch) == until {
            break;
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::path::PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "runs".into()));
    let (samples, held_out) = (8192, 2048);
    // A step at 4096 holds at least three 4096 x 2048 f32 activations (96 MiB): over the
    // limit, so the first step shrinks its micro-batch until a step fits.
    let config = ConfigBuilder::new("custom-loop")
        .output_dir(&out)
        .epochs(12)
        .batch_size(4096)
        .memory_limit(MemorySize::Bytes(80 << 20), OnLimit::Shrink)
        // val_loss, lower is better, the best weights restored: the defaults.
        .early_stopping(EarlyStoppingConfig {
            patience: 2,
            min_delta: 0.005,
            ..Default::default()
        })
        .build()?;
    let mut run = HandLoop::setup(config.clone(), samples, Net::new)?;
    // Training rows on the run's (autodiff) device; the held-out rows on validation's, the
    // configured device without autodiff, where the model `validate` hands over lives.
    let all = samples + held_out;
    let (x, y) = data(all, run.device());
    let train = (x.slice([0..samples, 0..16]), y.slice([0..samples, 0..1]));
    let (x, y) = data(all, run.validation_device());
    let valid = (
        x.slice([samples..all, 0..16]),
        y.slice([samples..all, 0..1]),
    );
    // Two epochs, then the process "dies" after epoch 2's checkpoint...
    epochs(&mut run, &train, &valid, Some(2))?;
    let dir = run.run_dir().to_path_buf();
    drop(run);
    // ... and the run goes on from it, as if it had never stopped.
    let mut run = HandLoop::resume(config, &dir, samples, Net::new)?;
    epochs(&mut run, &train, &valid, None)?;
    let micro = run.micro_batch();
    drop((train, valid));
    let summary = run.finish()?;
    let stopped = match (summary.stopped_early, summary.best_epoch) {
        (true, Some(best)) => format!(
            "stopped early after epoch {}, best epoch {best}",
            summary.epochs
        ),
        _ => format!("all {} epochs", summary.epochs),
    };
    println!(
        "custom-loop: {stopped} (resumed after epoch 2), {} steps, loss {:.4} -> {:.4}, \
         train_mae {:.4}, val_loss {:.4}, val_mae {:.4}; micro-batch {micro} of 4096 after the limit shrank it; \
         peak {} in use (limit 80.0 MiB); {}",
        summary.steps,
        summary.first_loss.unwrap_or(f64::NAN),
        summary.final_loss.unwrap_or(f64::NAN),
        summary.metric("train_mae").unwrap_or(f64::NAN),
        summary
            .best_value
            .or(summary.final_val_loss)
            .unwrap_or(f64::NAN),
        summary.metric("val_mae").unwrap_or(f64::NAN),
        format_bytes(summary.peak_bytes_in_use),
        dir.display()
    );
    Ok(())
}
