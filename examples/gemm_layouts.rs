//! W1's five large matrix products timed with the `gemm` crate alone, in the layouts Burn's
//! forward and backward passes give them (docs/performance.md, "Where a W1 step goes now"),
//! and the input gradient's product once more with its transposed operand copied first, as
//! upstream draft 3 proposes. `scripts/peers/gemm_blas.py` times the same products in MKL
//! (through PyTorch) and OpenBLAS (through NumPy).
//!
//!     cargo run --release --example gemm_layouts
//!
//! `unsafe`: `gemm::gemm` takes raw pointers and strides. Each call here passes pointers into
//! vectors that live across the call, sized m×k, k×n and m×n for the strides given, and the
//! output does not alias the inputs.

use std::time::Instant;

const CALLS: usize = 30;

/// Row-major C[m,n] = A[m,k] B[k,n], A or B the transposed view of a row-major buffer.
fn product(
    (m, n, k): (usize, usize, usize),
    a: &[f32],
    a_t: bool,
    b: &[f32],
    b_t: bool,
    c: &mut [f32],
) {
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
    assert!(a.len() == m * k && b.len() == k * n && c.len() == m * n);
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
}

/// `src` is a row-major [rows, cols] matrix; writes its transpose, row-major [cols, rows], in
/// 8×8 tiles, each tile's writes along the destination's rows (about 0.6 ms for 1024×1024 on
/// one core of the machine docs/performance.md names; 32×32 tiles took 2.6 ms).
fn transpose_into(src: &[f32], rows: usize, cols: usize, dst: &mut [f32]) {
    const TILE: usize = 8;
    for r0 in (0..rows).step_by(TILE) {
        for c0 in (0..cols).step_by(TILE) {
            for c in c0..(c0 + TILE).min(cols) {
                for r in r0..(r0 + TILE).min(rows) {
                    dst[c * rows + r] = src[r * cols + c];
                }
            }
        }
    }
}

/// The median of `CALLS` timings of `f`, in milliseconds, after two untimed calls.
fn median_ms(mut f: impl FnMut()) -> f64 {
    f();
    f();
    let mut times: Vec<f64> = (0..CALLS)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn filled(len: usize, seed: u32) -> Vec<f32> {
    (0..len)
        .map(|i| {
            ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8) as f32 / 16_777_216.0
        })
        .collect()
}

fn main() {
    let products = [
        ("x.W1", 256, 1024, 784, false, false),
        ("h.W2", 256, 1024, 1024, false, false),
        ("gy.W2T", 256, 1024, 1024, false, true),
        ("hT.gy", 1024, 1024, 256, true, false),
        ("xT.gy", 784, 1024, 256, true, false),
    ];
    let mut sum = 0.0;
    for (name, m, n, k, a_t, b_t) in products {
        let (a, b, mut c) = (filled(m * k, 1), filled(k * n, 2), vec![0.0f32; m * n]);
        let ms = median_ms(|| product((m, n, k), &a, a_t, &b, b_t, &mut c));
        sum += ms;
        let gflops = 2.0 * (m * n * k) as f64 / ms / 1e6;
        println!("{name}: {ms:.2} ms, {gflops:.0} GFLOP/s");
    }
    println!("sum: {sum:.2} ms");

    // The input gradient's product with W2ᵀ copied into a contiguous buffer first (a fresh
    // buffer each call, as flex would allocate it), the copy inside the timed region.
    let (m, n, k) = (256, 1024, 1024);
    let (gy, w2, mut c) = (filled(m * k, 3), filled(n * k, 4), vec![0.0f32; m * n]);
    let copy = median_ms(|| {
        let mut w2t = vec![0.0f32; k * n];
        transpose_into(&w2, n, k, &mut w2t);
        std::hint::black_box(&w2t);
    });
    let copied = median_ms(|| {
        let mut w2t = vec![0.0f32; k * n];
        transpose_into(&w2, n, k, &mut w2t);
        product((m, n, k), &gy, false, &w2t, false, &mut c);
    });
    println!("gy.W2T copied first: {copied:.2} ms (the copy alone {copy:.2} ms)");
}
