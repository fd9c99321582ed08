//! Train a model that tidemark has never seen: the model, dataset, batcher and loss are all
//! defined in this example (`task.rs`), and tidemark brings the rest: a memory limit that
//! shrinks the micro-batch when a step does not fit, gradient accumulation with the large-batch
//! update, bf16 compute over f32 weights, snapshots, `memory.svg` and checkpoints.
//!
//!     cargo run --release --example custom_model [-- OUTPUT_DIR [--no-limit]]
//!
//! `--no-limit` trains the same run without the limit, for comparison.

mod task;

use tidemark::config::{ConfigBuilder, MemorySize, OnLimit, OptimizerKind, Precision};
use tidemark::memory::{format_bytes, CountingAllocator};
use tidemark::record::{EpochProgress, Observer, Snapshot};

// Opt in to host memory accounting, as the `tidemark` binary does: on flex it is what the
// limit is measured against.
#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator::new();

/// Prints each epoch and every memory action.
struct Print;

impl Observer for Print {
    fn message(&mut self, text: &str) {
        eprintln!("{text}");
    }
    fn warning(&mut self, warning: &tidemark::record::Warning) {
        eprintln!("warning: {warning}");
    }
    fn step(&mut self, _: &EpochProgress) {}
    fn snapshot(&mut self, s: &Snapshot) {
        match (&s.action, s.loss) {
            (Some(action), _) => {
                eprintln!("memory {action}: {}", s.detail.as_deref().unwrap_or(""))
            }
            (None, Some(loss)) => eprintln!(
                "epoch {}  loss {loss:.4}  val_mae {:.4}  micro-batch {} x {}  peak {}",
                s.epoch,
                s.metric("val_mae").unwrap_or(f64::NAN),
                s.micro_batch,
                s.accumulation_steps,
                format_bytes(s.memory.peak_bytes_in_use),
            ),
            _ => {}
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = args.first().cloned().unwrap_or_else(|| "runs".into());
    let limit = !args.iter().any(|a| a == "--no-limit");
    let name = if limit {
        "custom-model"
    } else {
        "custom-model-no-limit"
    };
    let mut builder = ConfigBuilder::new(name)
        .output_dir(&out)
        .epochs(6)
        .batch_size(2048)
        .accumulation_steps(2)
        .optimizer(OptimizerKind::Adam, 3e-3)
        .precision(Precision::Bf16);
    if limit {
        // A limit that a step of 2 x 2048 samples does not fit (14.3 MiB at its peak on flex)
        // but a step of 4 x 1024 does (10.6 MiB): the first step shrinks, then training goes
        // on with the same effective batch.
        builder = builder.memory_limit(MemorySize::Bytes(12 << 20), OnLimit::Shrink);
    }
    let config = builder.build()?;

    let summary = tidemark::Trainer::new(config)
        .observer(Print)
        .fit(task::Sales::new(256, 16384))?;
    println!(
        "{}: {} epochs; loss {:.4} -> {:.4}, val MAE {:.4}; micro-batch {} x {} after {} memory \
         action(s); highest peak {} in use (with any attempt a limit stopped); limit {}; {}",
        summary.name,
        summary.epochs,
        summary.first_loss.unwrap_or(f64::NAN),
        summary.final_loss.unwrap_or(f64::NAN),
        summary.metric("val_mae").unwrap_or(f64::NAN),
        summary.micro_batch,
        summary.accumulation_steps,
        summary.memory_actions,
        format_bytes(summary.peak_bytes_in_use),
        summary.limit_bytes.map_or("none".into(), format_bytes),
        summary.run_dir.display(),
    );
    Ok(())
}
