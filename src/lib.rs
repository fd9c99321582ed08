//! # tidemark
//!
//! A training framework on [Burn](https://burn.dev) for people who share GPUs: memory is
//! measured every epoch, written to disk and drawn, and governed by explicit policies: growth,
//! preallocation, a hard limit that fails cleanly or shrinks the micro-batch, and clearing
//! between runs that is verified against a baseline.
//!
//! A run is described by a [`RunConfig`](config::RunConfig), read from TOML by the CLI
//! (`tidemark train --config FILE`) or built in code:
//!
//! ```no_run
//! use tidemark::config::ConfigBuilder;
//!
//! let config = ConfigBuilder::new("demo")
//!     .synthetic(4096, 32, 4)
//!     .hidden(&[128, 128])
//!     .epochs(3)
//!     .batch_size(64)
//!     .accumulation_steps(2)
//!     .build()?;
//! let summary = tidemark::Trainer::new(config).run()?;
//! println!("{:?} -> {}", summary.metric("val_accuracy"), summary.run_dir.display());
//! # Ok::<(), tidemark::Error>(())
//! ```
//!
//! Modules, in dependency order (each imports only those before it): [`config`] ->
//! [`backend`], [`data`], [`model`] -> [`memory`] -> [`record`] -> [`report`] -> [`Error`] ->
//! [`task`] -> [`train`] -> [`inference`] -> [`kinds`] -> `builtin` -> [`compare`],
//! [`sweep`]. The `cli`
//! module is the binary's and uses them all (docs/architecture.md prints the graph). Each type
//! has one path: a snapshot is [`record::Snapshot`], the memory guard [`train::MemoryGuard`]
//! and its recorder [`train::RunRecorder`].
#![warn(missing_docs)]
// `forbid` cannot be relaxed per module; `deny` can, and only `memory::host` does, with its
// reason in its docs.
#![deny(unsafe_code)]

mod app;
pub mod backend;
mod cli;
pub mod compare;
pub mod config;
pub mod data;
mod error;
mod failpoint;
pub mod inference;
pub mod kinds;
pub mod lease;
pub mod memory;
pub mod model;
pub mod record;
pub mod report;
pub mod sweep;
pub mod task;
pub mod train;

#[doc = include_str!("../docs/library.md")]
pub mod guide {}

/// Every Rust block in `docs/` is a doctest (`docs/library.md` is [`guide`]); the shell
/// commands shown there run in CI through `scripts/docs-commands.py`. The README's Rust block
/// is a piece of `docs/library.md`'s (test `the_readme_teaser_is_part_of_the_library_doctest`).
#[cfg(doctest)]
mod docs {
    #[doc = include_str!("../docs/README.md")]
    mod index {}
    #[doc = include_str!("../docs/advisor.md")]
    mod advisor {}
    #[doc = include_str!("../docs/architecture.md")]
    mod architecture {}
    #[doc = include_str!("../docs/backends.md")]
    mod backends {}
    #[doc = include_str!("../docs/benchmarks.md")]
    mod benchmarks {}
    #[doc = include_str!("../docs/cluster.md")]
    mod cluster {}
    #[doc = include_str!("../docs/configuration.md")]
    mod configuration {}
    #[doc = include_str!("../docs/cubecl-memory.md")]
    mod cubecl_memory {}
    #[doc = include_str!("../docs/data.md")]
    mod data {}
    #[doc = include_str!("../docs/gpu-results.md")]
    mod gpu_results {}
    #[doc = include_str!("../docs/memory.md")]
    mod memory {}
    #[doc = include_str!("../docs/outputs.md")]
    mod outputs {}
    #[doc = include_str!("../docs/performance.md")]
    mod performance {}
    #[doc = include_str!("../docs/resume.md")]
    mod resume {}
    #[doc = include_str!("../docs/scale.md")]
    mod scale {}
    #[doc = include_str!("../docs/search.md")]
    mod search {}
    #[doc = include_str!("../docs/training.md")]
    mod training {}
}

pub use app::App;
/// The `clap` an [`App`]'s own commands are written in.
pub use clap;
pub use error::{Error, LeaseError, SweepError, TrainingError, UsageError};
pub use task::Task;
pub use train::{HandLoop, Trainer};

// Unit tests measure host memory, so their binary counts allocations like the CLI does.
#[cfg(test)]
#[global_allocator]
static ALLOC: memory::CountingAllocator = memory::CountingAllocator::new();
