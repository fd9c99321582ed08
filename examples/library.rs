//! Train from a config built in code, through the same API the CLI uses.
//!
//!     cargo run --release --example library

use tidemark::config::{ConfigBuilder, OptimizerKind};
use tidemark::memory::{format_bytes, CountingAllocator};

// Opt in to host memory accounting, as the `tidemark` binary does.
#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator::new();

fn main() -> Result<(), tidemark::Error> {
    // As the `tidemark` binary does: this thread runs its share of flex's parallel work.
    tidemark::backend::join_compute_pool();
    let config = ConfigBuilder::new("library-example")
        .synthetic(8192, 32, 4)
        .hidden(&[128, 128])
        .epochs(3)
        .batch_size(64)
        .accumulation_steps(2)
        .optimizer(OptimizerKind::Adam, 1e-3)
        .build()?;
    let summary = tidemark::Trainer::new(config).run()?;
    println!(
        "val accuracy {:.1}%, peak {} in use, snapshots in {}",
        100.0 * summary.metric("val_accuracy").unwrap_or(0.0),
        format_bytes(summary.peak_bytes_in_use),
        summary.run_dir.display()
    );
    Ok(())
}
