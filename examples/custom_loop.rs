//! A hand-written training loop (the TF2 custom-training-loop and `GradientTape` style) that
//! keeps tidemark's memory layer: a `Governor` applies the `[memory]` policies at run start,
//! inside each step, at each epoch's end and at run end, returns the same typed limit error,
//! performs the clear, and writes the same `snapshots.jsonl` (and `memory.svg`).
//!
//! The loop here does its own batching; `Governor::run_step` runs each step with the
//! micro-batch size the limit allows, and when a step breaches the limit with
//! `on_limit = "shrink"`, records it and runs the step again with the halved size.
//!
//!     cargo run --release --example custom_loop [-- OUTPUT_DIR]

use burn::module::Module;
use burn::nn::loss::MseLoss;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{GradientsAccumulator, GradientsParams};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Tensor, TensorData};
use tidemark::config::{ConfigBuilder, MemorySize, OnLimit};
use tidemark::memory::{format_bytes, CountingAllocator};
use tidemark::record::{Observer, Snapshot, Warning};
use tidemark::report::{draw_memory_svg, PictureOf};
use tidemark::train::{build_optimizer, resting_bytes, Checkpointer};
use tidemark::train::{EpochFigures, Governor, Layout};

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
            hidden: LinearConfig::new(16, 512).init(device),
            out: LinearConfig::new(512, 1).init(device),
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

/// Shows what the governor writes.
struct Print;

impl Observer for Print {
    fn warning(&mut self, warning: &Warning) {
        eprintln!("warning: {warning}");
    }
    fn snapshot(&mut self, s: &Snapshot) {
        let what = match (&s.action, s.loss) {
            (Some(action), _) => format!("memory {action}: {}", s.detail.as_deref().unwrap_or("")),
            (None, Some(loss)) => format!("epoch {} loss {loss:.4}", s.epoch),
            _ => format!("{:?}", s.event),
        };
        eprintln!(
            "{what}  [micro-batch {}, peak {}]",
            s.micro_batch,
            format_bytes(s.memory.peak_bytes_in_use)
        );
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::path::PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "runs".into()));
    let (epochs, batch, samples) = (3, 4096, 16384);
    // Only [memory] (and [train]'s optimizer, for the resting estimate) matter to the governor.
    // A batch of 4096 through 512 hidden units does not fit under 40 MiB here; 2048 does.
    let config = ConfigBuilder::new("custom-loop")
        .batch_size(batch)
        .memory_limit(MemorySize::Bytes(28 << 20), OnLimit::Shrink)
        .build()?;
    let run_dir = out.join("custom-loop");
    std::fs::create_dir_all(&run_dir)?;
    let device = Device::flex();
    let mut governor = Governor::new(
        &config.memory,
        &device,
        &run_dir,
        Layout::new(batch, 1),
        Print,
    )?;

    let ad = device.clone().autodiff();
    ad.seed(42);
    let (x, y) = data(samples, &ad);
    let mut model = Net::new(&ad);
    let mut optimizer = build_optimizer(&config.train); // Adam, as configured
    let checkpointer = Checkpointer::new(&run_dir);
    governor.run_start(resting_bytes(&model, &config.train))?;

    let mut step = 0;
    for epoch in 1..=epochs {
        governor.begin_epoch();
        let mut loss_sum = 0.0;
        for start in (0..samples).step_by(batch) {
            step += 1;
            let rows = batch.min(samples - start);
            // One optimizer step over `rows` samples, in micro-batches of the size the governor
            // gives; `run_step` retries it with smaller ones when the limit asks to shrink.
            let (grads, loss) = governor.run_step(epoch, step, |micro, check| {
                let mut accumulator = GradientsAccumulator::<Net>::new();
                let mut loss = 0.0;
                for offset in (start..start + rows).step_by(micro) {
                    let n = micro.min(start + rows - offset);
                    let xb = x.clone().narrow(0, offset, n);
                    let yb = y.clone().narrow(0, offset, n);
                    let l = MseLoss::new()
                        .forward(model.forward(xb), yb, burn::nn::loss::Reduction::Mean)
                        .mul_scalar(n as f64 / rows as f64);
                    loss += l.clone().into_scalar::<f32>() as f64;
                    let grads = GradientsParams::from_grads(l.backward(), &model);
                    check.check()?;
                    accumulator.accumulate(&model, grads);
                }
                Ok((accumulator.grads(), loss))
            })?;
            model = optimizer.step(1e-3, model, grads);
            governor.after_step(epoch, step)?;
            loss_sum += loss * rows as f64;
        }
        governor.epoch_end(
            epoch,
            EpochFigures {
                loss: Some(loss_sum / samples as f64),
                ..EpochFigures::default()
            },
        )?;
        governor.checkpoint(epoch, || checkpointer.save(epoch, step, &model, &optimizer))?;
    }
    drop((model, optimizer, x, y));
    let retained = governor.run_end(epochs)?;
    let picture = PictureOf {
        title: "custom-loop",
        limit: governor.control().limit_bytes(),
        monitor: None,
    };
    draw_memory_svg(governor.snapshots_path(), picture)?;
    println!(
        "custom-loop: {epochs} epochs, {step} steps; micro-batch {} after {} memory action(s); \
         highest peak {} in use, with the attempt the limit stopped (limit {}); retained {} B after \
         release; {}",
        governor.layout().micro_batch(),
        governor.stats().memory_actions,
        format_bytes(governor.stats().peak_bytes_in_use),
        format_bytes(governor.control().limit_bytes().unwrap_or(0)),
        retained.retained_bytes_in_use,
        run_dir.display()
    );
    Ok(())
}
