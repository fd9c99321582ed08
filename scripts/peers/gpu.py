"""The GPU side by side, the peers' half: one workload in one framework and mode, timed the way
`scripts/gpu-peers.sh` times tidemark, in its own process. Prints one JSON line.

    python3 gpu.py WORKLOAD IMPL [--steps N] [--device cuda|cpu]

WORKLOAD, the shapes of tidemark's configs (Adam, lr 1e-3, cross-entropy):
    w1      MLP 784-1024-1024-10 (ReLU), batch 256, synthetic data (configs/bench/w1.toml)
    mlp4k   MLP 784-4096-4096-4096-10, batch 2048, synthetic data: compute-bound
    cnn     the digits CNN of configs/digits-cnn.toml (two blocks of 3x3 "same" convolution,
            batch norm, ReLU and 2x2 max-pooling, 16 and 32 channels; dropout 0.1; a linear
            head), batch 32, on data/digits.csv.gz
IMPL:
    torch-eager     PyTorch eager, f32
    torch-compile   PyTorch, the model under torch.compile, f32
    torch-bf16      PyTorch eager under autocast(bfloat16)
    jax-jit         JAX, the whole step under jax.jit, f32 (Adam written out: no optax needed)

Each step takes its batch from host memory (as tidemark's loader does), runs forward, backward
and the update, and reads the loss, which waits for the device: every step is synchronised.
The first step (compiling, for torch.compile and jit) is reported on its own as the warm-up;
then N more steps warm up, and the median of the N after them is the step time.

Memory: on CUDA, PyTorch's max_memory_allocated / max_memory_reserved, JAX's memory_stats
(peak_bytes_in_use; the pool's peak as reserved), set XLA_PYTHON_CLIENT_PREALLOCATE=false (the
shell script does) so that JAX's pool grows as it needs; then, after every tensor, the model,
the optimizer and the caches are released, what `nvidia-smi` says this process still holds. On
CPU, the process's peak resident set.
"""

import argparse
import gc
import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

WORKLOADS = {
    "w1": {"hidden": (1024, 1024), "batch": 256},
    "mlp4k": {"hidden": (4096, 4096, 4096), "batch": 2048},
    "cnn": {"channels": (16, 32), "batch": 32},
}
FEATURES, CLASSES = 784, 10


def data(workload, samples):
    """Host arrays (x, y): W1's synthetic classes, or the digits (features / 16, as 1x8x8)."""
    if workload == "cnn":
        here = os.path.dirname(os.path.abspath(__file__))
        path = os.path.join(here, "..", "..", "data", "digits.csv.gz")
        rows = np.loadtxt(gzip.open(path, "rt"), delimiter=",", dtype=np.float32)
        x = (rows[:, :-1] / 16.0).reshape(-1, 1, 8, 8).astype(np.float32)
        return x, rows[:, -1].astype(np.int64)
    rng = np.random.default_rng(42)
    centers = rng.normal(size=(CLASSES, FEATURES)).astype(np.float32)
    labels = rng.integers(0, CLASSES, size=samples)
    x = centers[labels] + 4.0 * rng.normal(size=(samples, FEATURES)).astype(np.float32)
    return x, labels.astype(np.int64)


def batches(x, y, batch):
    """Endless batches, in order, wrapping around."""
    starts = list(range(0, len(x) - batch + 1, batch))
    while True:
        for i in starts:
            yield x[i : i + batch], y[i : i + batch]


def nvml_held():
    """What nvidia-smi says this process holds on the GPU, in bytes (None where it cannot say)."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0] == str(os.getpid()):
            return int(parts[1]) << 20
    return 0


def timed(step, feed, steps):
    """The first step's ms, then the median of `steps` synchronised steps after `steps` more."""
    t = time.perf_counter()
    step(*next(feed))
    first = (time.perf_counter() - t) * 1e3
    for _ in range(steps):
        step(*next(feed))
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        step(*next(feed))
        times.append((time.perf_counter() - t) * 1e3)
    return first, statistics.median(times)


def run_torch(workload, impl, feed, steps, device):
    import torch

    torch.manual_seed(42)
    spec = WORKLOADS[workload]
    nn = torch.nn
    if workload == "cnn":
        layers, width = [], 1
        for c in spec["channels"]:
            layers += [nn.Conv2d(width, c, 3, padding="same"), nn.BatchNorm2d(c), nn.ReLU(), nn.MaxPool2d(2)]
            width = c
        model = nn.Sequential(*layers, nn.Flatten(), nn.Dropout(0.1), nn.Linear(width * 2 * 2, CLASSES))
    else:
        layers, width = [], FEATURES
        for h in spec["hidden"]:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        model = nn.Sequential(*layers, nn.Linear(width, CLASSES))
    model = model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    forward = torch.compile(model) if impl == "torch-compile" else model
    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.reset_peak_memory_stats()

    def step(xb, yb):
        xb, yb = torch.from_numpy(xb).to(device), torch.from_numpy(yb).to(device)
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device.split(":")[0], torch.bfloat16, enabled=impl == "torch-bf16"):
            loss = nn.functional.cross_entropy(forward(xb), yb)
        loss.backward()
        opt.step()
        return loss.item()

    first, median = timed(step, feed, steps)
    out = {"first_step_ms": first, "median_step_ms": median}
    if cuda:
        out["peak_in_use"] = torch.cuda.max_memory_allocated()
        out["peak_reserved"] = torch.cuda.max_memory_reserved()
        # The step holds the model and the optimizer too: release it with them.
        del model, opt, forward, step
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.synchronize()
        out["reserved_after_release"] = torch.cuda.memory_reserved()
        out["nvml_after_release"] = nvml_held()
    return out


def run_jax(workload, feed, steps, device):
    import jax
    import jax.numpy as jnp

    dev = jax.devices("gpu" if device.startswith("cuda") else "cpu")[0]
    spec = WORKLOADS[workload]
    key = jax.random.PRNGKey(42)

    def dense(key, n_in, n_out):
        bound = 1.0 / np.sqrt(n_in)
        w = jax.random.uniform(key, (n_in, n_out), jnp.float32, -bound, bound)
        return {"w": w, "b": jnp.zeros((n_out,), jnp.float32)}

    if workload == "cnn":
        params, width = {"blocks": []}, 1
        for c in spec["channels"]:
            key, sub = jax.random.split(key)
            bound = 1.0 / np.sqrt(width * 9)
            params["blocks"].append({
                "k": jax.random.uniform(sub, (c, width, 3, 3), jnp.float32, -bound, bound),
                "b": jnp.zeros((c,), jnp.float32),
                "gamma": jnp.ones((c,), jnp.float32),
                "beta": jnp.zeros((c,), jnp.float32),
            })
            width = c
        key, sub = jax.random.split(key)
        params["head"] = dense(sub, width * 2 * 2, CLASSES)

        def forward(params, x, key):
            for block in params["blocks"]:
                x = jax.lax.conv_general_dilated(x, block["k"], (1, 1), "SAME")
                x = x + block["b"][None, :, None, None]
                mean = x.mean(axis=(0, 2, 3), keepdims=True)
                var = x.var(axis=(0, 2, 3), keepdims=True)
                x = (x - mean) / jnp.sqrt(var + 1e-5)
                x = x * block["gamma"][None, :, None, None] + block["beta"][None, :, None, None]
                x = jax.nn.relu(x)
                x = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
            x = x.reshape(x.shape[0], -1)
            keep = jax.random.bernoulli(key, 0.9, x.shape)
            x = jnp.where(keep, x / 0.9, 0.0)
            return x @ params["head"]["w"] + params["head"]["b"]
    else:
        params, width = [], FEATURES
        for h in (*spec["hidden"], CLASSES):
            key, sub = jax.random.split(key)
            params.append(dense(sub, width, h))
            width = h

        def forward(params, x, key):
            for layer in params[:-1]:
                x = jax.nn.relu(x @ layer["w"] + layer["b"])
            return x @ params[-1]["w"] + params[-1]["b"]

    def loss_fn(params, x, y, key):
        logits = forward(params, x, key)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    def adam(params, grads, state, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
        t = state["t"] + 1
        m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, state["m"], grads)
        v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, state["v"], grads)
        scale = lr * jnp.sqrt(1 - b2**t) / (1 - b1**t)
        params = jax.tree.map(lambda p, m, v: p - scale * m / (jnp.sqrt(v) + eps), params, m, v)
        return params, {"t": t, "m": m, "v": v}

    @jax.jit
    def train_step(params, state, x, y, key):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y, key)
        params, state = adam(params, grads, state)
        return params, state, loss

    params = jax.device_put(params, dev)
    zeros = lambda: jax.tree.map(jnp.zeros_like, params)  # noqa: E731
    state = {"t": jnp.zeros((), jnp.float32), "m": zeros(), "v": zeros()}
    held = {"params": params, "state": state, "key": key}

    def step(xb, yb):
        held["key"], sub = jax.random.split(held["key"])
        x, y = jax.device_put(xb, dev), jax.device_put(yb.astype(np.int32), dev)
        held["params"], held["state"], loss = train_step(held["params"], held["state"], x, y, sub)
        return float(loss)

    first, median = timed(step, feed, steps)
    out = {"first_step_ms": first, "median_step_ms": median}
    if device.startswith("cuda"):
        stats = dev.memory_stats() or {}
        out["peak_in_use"] = stats.get("peak_bytes_in_use")
        out["peak_reserved"] = stats.get("peak_pool_bytes", stats.get("peak_bytes_in_use"))
        held.clear()
        del params, state, step, train_step
        jax.clear_caches()
        gc.collect()
        for array in jax.live_arrays():
            array.delete()
        out["reserved_after_release"] = (dev.memory_stats() or {}).get("pool_bytes")
        out["nvml_after_release"] = nvml_held()
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument("impl", choices=["torch-eager", "torch-compile", "torch-bf16", "jax-jit"])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = parser.parse_args()
    spec = WORKLOADS[args.workload]
    x, y = data(args.workload, max(spec["batch"] * 8, 4096))
    feed = batches(x, y, spec["batch"])
    if args.impl.startswith("torch"):
        out = run_torch(args.workload, args.impl, feed, args.steps, args.device)
    else:
        out = run_jax(args.workload, feed, args.steps, args.device)
    if args.device == "cpu":
        out["peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    row = {"workload": args.workload, "impl": args.impl, "device": args.device, "steps": args.steps, **out}
    print(json.dumps(row))


if __name__ == "__main__":
    sys.exit(main())
