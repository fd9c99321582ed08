"""W1's five large matrix products in MKL (through PyTorch) and OpenBLAS (through NumPy).

The same shapes and layouts as `cargo run --release --example gemm_layouts` (the gemm crate
that Burn's flex backend calls): row-major f32, an operand given as the transposed view of a
row-major buffer where Burn's backward pass gives one, the output buffer reused, two threads,
the median of 30 calls after two untimed ones. Prints one line a product and library, then the
sums, in the example's format.

    .venv-peers/bin/python scripts/peers/gemm_blas.py   # after scripts/peers.sh made .venv-peers

The thread counts are set before the libraries load (OMP_NUM_THREADS, MKL_NUM_THREADS,
OPENBLAS_NUM_THREADS; TIDEMARK_BLAS_THREADS, default 2, the cores of the machines this was
written on).
"""

import os

THREADS = os.environ.get("TIDEMARK_BLAS_THREADS", "2")
for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[var] = THREADS

import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

CALLS = 30
# (name, m, n, k, A transposed, B transposed): C[m,n] = A[m,k] B[k,n]
PRODUCTS = [
    ("x.W1", 256, 1024, 784, False, False),
    ("h.W2", 256, 1024, 1024, False, False),
    ("gy.W2T", 256, 1024, 1024, False, True),
    ("hT.gy", 1024, 1024, 256, True, False),
    ("xT.gy", 784, 1024, 256, True, False),
]


def median_ms(f):
    f()
    f()
    times = []
    for _ in range(CALLS):
        start = time.perf_counter()
        f()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def operands(m, n, k, a_t, b_t, rng):
    a = rng.random((k, m), dtype=np.float32).T if a_t else rng.random((m, k), dtype=np.float32)
    b = rng.random((n, k), dtype=np.float32).T if b_t else rng.random((k, n), dtype=np.float32)
    return a, b


def main():
    import torch

    torch.set_num_threads(int(THREADS))
    rng = np.random.default_rng(0)
    sums = {"MKL (PyTorch)": 0.0, "OpenBLAS (NumPy)": 0.0}
    for name, m, n, k, a_t, b_t in PRODUCTS:
        a, b = operands(m, n, k, a_t, b_t, rng)
        assert a.flags.c_contiguous != a_t and b.flags.c_contiguous != b_t
        c = np.empty((m, n), dtype=np.float32)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)  # the same views, no copy
        tc = torch.empty((m, n))
        runs = {
            "MKL (PyTorch)": lambda: torch.mm(ta, tb, out=tc),
            "OpenBLAS (NumPy)": lambda: np.matmul(a, b, out=c),
        }
        for lib, f in runs.items():
            ms = median_ms(f)
            sums[lib] += ms
            print(f"{name} {lib}: {ms:.2f} ms, {2 * m * n * k / ms / 1e6:.0f} GFLOP/s")
    for lib, ms in sums.items():
        print(f"sum {lib}: {ms:.2f} ms")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; numpy {np.__version__}")


if __name__ == "__main__":
    main()
