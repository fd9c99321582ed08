//! A hand-written training loop (the TF2 custom-training-loop and `GradientTape` style, or
//! Lightning Fabric's) that keeps tidemark's memory layer, in four calls into tidemark besides
//! the model and the data: `HandLoop::setup`, `step`, `end_epoch` and `finish`.
//!
//! `setup` makes the run directory and builds the model on the configured device; `step` runs
//! one optimizer step over a batch, in the micro-batches the memory limit allows (here a limit
//! that a batch of 4096 breaches, with `on_limit = "shrink"`: the step halves its micro-batch
//! and runs again, keeping the effective batch), with the update measured before and after;
//! `end_epoch` writes the epoch's snapshot and checkpoint; `finish` releases, checks the
//! release, and writes `memory.svg` and `summary.json`.
//!
//!     cargo run --release --example custom_loop [-- OUTPUT_DIR]

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Tensor, TensorData};
use tidemark::config::{ConfigBuilder, MemorySize, OnLimit};
use tidemark::memory::{format_bytes, CountingAllocator};
use tidemark::train::EpochFigures;
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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::path::PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "runs".into()));
    let (batch, samples) = (4096, 8192);
    // A step at 4096 holds at least three 4096 x 2048 f32 activations (96 MiB): over the
    // limit, so the first step shrinks its micro-batch until a step fits.
    let config = ConfigBuilder::new("custom-loop")
        .output_dir(&out)
        .epochs(3)
        .batch_size(batch)
        .memory_limit(MemorySize::Bytes(80 << 20), OnLimit::Shrink)
        .build()?;
    let mut run = HandLoop::setup(config, samples, Net::new)?; // 1
    let (x, y) = data(samples, run.device());
    for _epoch in run.epochs() {
        for start in (0..samples).step_by(batch) {
            let rows = batch.min(samples - start);
            run.step(rows, |model, part| {
                // 2
                let (xb, yb) = (x.clone(), y.clone());
                let at = start + part.start..start + part.end;
                let xb = xb.slice([at.clone(), 0..16]);
                let yb = yb.slice([at, 0..1]);
                (model.forward(xb) - yb).powi_scalar(2).mean()
            })?;
        }
        run.end_epoch(EpochFigures::default())?; // 3
    }
    let micro = run.micro_batch();
    let dir = run.run_dir().to_path_buf();
    drop((x, y));
    let summary = run.finish()?; // 4
    println!(
        "custom-loop: {} epochs, {} steps, loss {:.4} -> {:.4}; micro-batch {micro} of {batch} \
         after the limit shrank it; peak {} in use (limit 80.0 MiB); {}",
        summary.epochs,
        summary.steps,
        summary.first_loss.unwrap_or(f64::NAN),
        summary.final_loss.unwrap_or(f64::NAN),
        format_bytes(summary.peak_bytes_in_use),
        dir.display()
    );
    Ok(())
}
