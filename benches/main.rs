//! `cargo bench`: the memory policies side by side, on the standard workloads.
//!
//!     cargo bench                          # full run (about 13 minutes on 2 cores, flex only)
//!     cargo bench -- --quick               # smoke run: tiny data, one epoch
//!     TIDEMARK_BENCH_QUICK=1 cargo test --bench policies -- w0   # W0's, on the test build (CI)
//!     TIDEMARK_BENCH_QUICK=1 cargo bench   # the same
//!     cargo bench -- w2                    # only the cases whose name contains "w2"
//!     cargo bench -- pipeline              # only the input-pipeline table
//!
//! For each workload (`configs/bench/w0.toml`..`w4.toml`, the files `tidemark compare` takes
//! too), each backend compiled in, and each policy, one case runs in its own process and prints
//! one result line; this process prints the table. See `benchmarks/mod.rs` for what is measured.
//! A last table per backend times the data loader against the training step
//! (`benchmarks/pipeline.rs`).

mod benchmarks;

use tidemark::memory::CountingAllocator;

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator::new();

fn main() {
    benchmarks::main();
}
