//! W1's five large matrix products timed with the `gemm` crate alone, in the layouts Burn's
//! forward and backward passes give them (docs/performance.md, "Where a W1 step goes now").
//!
//!     cargo run --release --example gemm_layouts
//!
//! `unsafe`: `gemm::gemm` takes raw pointers and strides. Each call here passes pointers into
//! vectors that live across the call, sized m×k, k×n and m×n for the strides given, and the
//! output does not alias the inputs.

use std::time::Instant;

/// Row-major C[m,n] = A[m,k] B[k,n], A or B given as the transposed view of a row-major buffer.
/// Returns the median of 30 calls, in milliseconds.
fn run(m: usize, n: usize, k: usize, a_t: bool, b_t: bool) -> f64 {
    let (a, b, mut c) = (
        vec![1.0f32; m * k],
        vec![1.0f32; k * n],
        vec![0.0f32; m * n],
    );
    let (a_rs, a_cs) = if a_t {
        (1, m as isize)
    } else {
        (k as isize, 1)
    };
    let (b_rs, b_cs) = if b_t {
        (1, k as isize)
    } else {
        (n as isize, 1)
    };
    let mut times = vec![];
    for _ in 0..30 {
        let start = Instant::now();
        // SAFETY: see the module doc: the buffers outlive the call and match the strides.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                c.as_mut_ptr(),
                1,
                n as isize,
                false,
                a.as_ptr(),
                a_cs,
                a_rs,
                b.as_ptr(),
                b_cs,
                b_rs,
                0.0f32,
                1.0f32,
                false,
                false,
                false,
                gemm::Parallelism::Rayon(0),
            );
        }
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() {
    let products = [
        ("x.W1", 256, 1024, 784, false, false),
        ("h.W2", 256, 1024, 1024, false, false),
        ("gy.W2T", 256, 1024, 1024, false, true),
        ("hT.gy", 1024, 1024, 256, true, false),
        ("xT.gy", 784, 1024, 256, true, false),
    ];
    for (name, m, n, k, a_t, b_t) in products {
        let ms = run(m, n, k, a_t, b_t);
        let gflops = 2.0 * (m * n * k) as f64 / ms / 1e6;
        println!("{name}: {ms:.2} ms, {gflops:.0} GFLOP/s");
    }
}
