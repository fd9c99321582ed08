//! The `tidemark` binary: parse arguments, run, map the outcome to an exit code.

// Count every heap allocation, so runs on backends without device pools (flex) report the
// memory they really hold, including the transient peak inside each step.
#[global_allocator]
static ALLOC: tidemark::memory::CountingAllocator = tidemark::memory::CountingAllocator::new();

fn main() {
    std::process::exit(tidemark::App::new().run());
}
