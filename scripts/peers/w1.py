"""W1 in a peer framework, timed the way tidemark times it.

W1: an MLP 784-1024-1024-10 (ReLU), batch 256, Adam (lr 1e-3), f32, cross-entropy, 8192
synthetic samples (80% training), 2 epochs; the same shape as configs/bench/w1.toml. Prints one
JSON line: the median optimizer step (device synchronised in the timed region) and epoch 2's
throughput as ms per 256 samples, the figures tidemark's bench and summary.json report.

    python w1.py torch          # PyTorch eager
    python w1.py tf             # TensorFlow, tf.function(jit_compile=True)
    python w1.py tf-eager       # TensorFlow eager
    python w1.py torch-profile  # PyTorch eager, epoch 2 under torch.profiler: its CPU time by
                                # what the operations are (as scripts/profile-step.sh splits
                                # tidemark's), one JSON line
"""

import json
import statistics
import sys
import time

import numpy as np

SAMPLES, FEATURES, CLASSES, BATCH, EPOCHS = 8192, 784, 10, 256, 2
HIDDEN = (1024, 1024)


def data():
    rng = np.random.default_rng(42)
    centers = rng.normal(size=(CLASSES, FEATURES)).astype(np.float32)
    labels = rng.integers(0, CLASSES, size=SAMPLES)
    x = centers[labels] + 4.0 * rng.normal(size=(SAMPLES, FEATURES)).astype(np.float32)
    n = int(SAMPLES * 0.8)
    return x[:n], labels[:n].astype(np.int64)


def torch_step(x, y):
    """W1's model, Adam and data in PyTorch, and its step at a batch's first sample."""
    import torch

    torch.manual_seed(42)
    layers, width = [], FEATURES
    for h in HIDDEN:
        layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
        width = h
    model = torch.nn.Sequential(*layers, torch.nn.Linear(width, CLASSES))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    xs, ys = torch.from_numpy(x), torch.from_numpy(y)

    def step(i):
        xb, yb = xs[i : i + BATCH], ys[i : i + BATCH]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    return step


def run_torch(x, y):
    return loop(torch_step(x, y), len(x), sync=lambda loss: loss.item())


def run_tf(x, y, compiled):
    import tensorflow as tf

    tf.random.set_seed(42)
    layers = [tf.keras.layers.Dense(h, activation="relu") for h in HIDDEN]
    model = tf.keras.Sequential([tf.keras.Input((FEATURES,)), *layers, tf.keras.layers.Dense(CLASSES)])
    opt = tf.keras.optimizers.Adam(1e-3)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    xs, ys = tf.constant(x), tf.constant(y)

    def train_step(xb, yb):
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, model(xb, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    if compiled:
        train_step = tf.function(train_step, jit_compile=True)

    def step(i):
        return train_step(xs[i : i + BATCH], ys[i : i + BATCH])

    return loop(step, len(x), sync=lambda loss: float(loss))


# torch.profiler's operations by what they do, first match wins, on self CPU time (so that a
# composite operation's time is counted once, in its parts). An operation run inside
# `Optimizer.step` is the optimizer's, whatever it is.
TORCH_KINDS = [
    ("optimizer (Adam's update, zero_grad)", r"^Optimizer\."),
    ("GEMM (oneDNN/MKL through addmm, mm)", r"^aten::(addmm|mm|bmm|matmul|linear)$"),
    ("loss: log-softmax, NLL and their gradients", r"softmax|nll_loss|cross_entropy"),
    ("copies and fills", r"^aten::(copy_|fill_|zero_|zeros|zeros_like|clone|contiguous|to|_to_copy)$"),
    ("allocation", r"^aten::(empty|empty_like|empty_strided|resize_)$"),
    ("element-wise (ReLU, its gradient, bias sums)", r"^aten::(relu|clamp_min|threshold_backward|"
                                                     r"add|add_|mul|mul_|div|sum|threshold)"),
    ("views and shapes", r"^aten::(t|transpose|view|reshape|as_strided|expand|slice|select|"
                         r"unsqueeze|squeeze|detach|alias|permute|_reshape_alias|numpy_T)$"),
    ("autograd engine", r"^autograd::|Backward|^torch::autograd"),
]


def torch_kind(event):
    """The kind of a profiled event: the optimizer's if `Optimizer.step` (or `zero_grad`)
    encloses it, else by its own name."""
    import re

    parent = event
    while parent is not None:
        if re.search(TORCH_KINDS[0][1], parent.name):
            return TORCH_KINDS[0][0]
        parent = parent.cpu_parent
    return next((n for n, p in TORCH_KINDS[1:] if re.search(p, event.name)), "other operations")


def run_torch_profile(x, y):
    """W1 in PyTorch eager as `run_torch` trains it, epoch 2 under torch.profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    step = torch_step(x, y)
    starts = list(range(0, len(x) - BATCH + 1, BATCH))

    def epoch():
        for i in starts:
            step(i).item()

    epoch()
    t = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        epoch()
    wall_ms = (time.perf_counter() - t) * 1e3 / len(starts)
    kinds = {name: 0.0 for name, _ in TORCH_KINDS}
    kinds["other operations"] = 0.0
    top = {name: {} for name in kinds}
    for e in prof.events():
        name = torch_kind(e)
        ms = e.self_cpu_time_total / 1e3 / len(starts)
        kinds[name] += ms
        top[name][e.name] = top[name].get(e.name, 0.0) + ms
    return {
        "steps": len(starts),
        "wall_ms_per_step": wall_ms,
        "threads": torch.get_num_threads(),
        "ms_per_step": kinds,
        "largest": {k: sorted(v.items(), key=lambda kv: -kv[1])[:3] for k, v in top.items()},
    }


def loop(step, n, sync):
    starts = list(range(0, n - BATCH + 1, BATCH))
    step_ms, epoch_ms = [], None
    for epoch in range(EPOCHS):
        t_epoch = time.perf_counter()
        for k, i in enumerate(starts):
            t = time.perf_counter()
            sync(step(i))
            if k > 0:  # tidemark's bench leaves out each epoch's first step too
                step_ms.append((time.perf_counter() - t) * 1e3)
        epoch_ms = (time.perf_counter() - t_epoch) * 1e3 / len(starts)
    return {"median_step_ms": statistics.median(step_ms), "epoch_ms_per_step": epoch_ms}


def main():
    which = sys.argv[1]
    x, y = data()
    if which == "torch":
        out = run_torch(x, y)
    elif which == "torch-profile":
        out = run_torch_profile(x, y)
    elif which in ("tf", "tf-eager"):
        out = run_tf(x, y, compiled=which == "tf")
    else:
        sys.exit(f"unknown peer {which!r}: torch, torch-profile, tf or tf-eager")
    print(json.dumps({"peer": which, **out}))


if __name__ == "__main__":
    main()
