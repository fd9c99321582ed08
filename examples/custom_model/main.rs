//! An app of its own on tidemark: a model kind that tidemark has never seen (`sales`: its
//! model, dataset, batcher and loss in `task.rs`, its `[model]` keys in `kind.rs`), and every
//! `tidemark` command for it from this program's own binary: `train`, `sweep` (in parallel
//! under leases, pruned), `report`, `evaluate`, `compare`, `validate`, and `--resume`.
//!
//!     cargo run --release --example custom_model -- train --config examples/custom_model/sales.toml
//!
//! `examples/custom_model/README.md` shows each command.

mod kind;
mod task;

// Host memory accounting, as the `tidemark` binary has it: on flex the limit is measured in it.
#[global_allocator]
static ALLOC: tidemark::memory::CountingAllocator = tidemark::memory::CountingAllocator::new();

fn main() {
    let app = tidemark::App::new().kind("sales", kind::SalesKind);
    std::process::exit(app.run());
}
