//! The host bytes one matrix product holds at its peak on flex, in f32 and in bf16, counted by
//! tidemark's allocator: the product of the activation-heavy MLP's hidden layers
//! (`configs/mlp-activations.toml`: a batch of 4096 by 256 features, times 256 by 256), and the
//! backward pass's input-gradient product with a transposed right operand. Used by
//! `docs/performance.md` ("bf16 on flex").
//!
//! ```text
//! cargo run --release --example bf16_matmul_peak
//! ```

use burn::tensor::{DType, Device, Tensor};
use tidemark::memory::{format_bytes, reset_host_peak, CountingAllocator, HostCounters};

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator::new();

/// The bytes above what was in use before that `product` allocates at its peak, and the bytes
/// its result holds.
fn transient(product: impl FnOnce() -> Tensor<2>) -> (u64, u64) {
    let before = HostCounters::read().in_use;
    reset_host_peak();
    let out = product();
    let peak = HostCounters::read().peak - before;
    let kept = HostCounters::read().in_use - before;
    drop(out);
    (peak, kept)
}

fn main() {
    let device = Device::flex();
    let (batch, width) = (4096, 256);
    println!(
        "product                         dtype  result      peak above inputs  ratio to result"
    );
    for dtype in [DType::F32, DType::BF16] {
        let x = Tensor::<2>::ones([batch, width], &device).cast(dtype);
        let w = Tensor::<2>::ones([width, width], &device).cast(dtype);
        // Warm the threads' packing buffers, so they are not counted below.
        drop(x.clone().matmul(w.clone()).into_data());
        let cases = [
            ("x [4096,256] . w [256,256]", false),
            ("dy [4096,256] . w^T", true),
        ];
        for (name, transposed) in cases {
            let (x, w) = (x.clone(), w.clone());
            let (peak, kept) = transient(move || match transposed {
                false => x.matmul(w),
                true => x.matmul(w.transpose()),
            });
            println!(
                "{name:<31} {:<6} {:>10}  {:>17}  {:>15.2}",
                format!("{dtype:?}").to_lowercase(),
                format_bytes(kept),
                format_bytes(peak),
                peak as f64 / kept.max(1) as f64
            );
        }
    }
}
