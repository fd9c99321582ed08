"""W1 in a peer framework, timed the way tidemark times it.

W1: an MLP 784-1024-1024-10 (ReLU), batch 256, Adam (lr 1e-3), f32, cross-entropy, 8192
synthetic samples (80% training), 2 epochs; the same shape as configs/bench/w1.toml. Prints one
JSON line: the median optimizer step (device synchronised in the timed region) and epoch 2's
throughput as ms per 256 samples, the figures tidemark's bench and summary.json report.

    python w1.py torch          # PyTorch eager
    python w1.py tf             # TensorFlow, tf.function(jit_compile=True)
    python w1.py tf-eager       # TensorFlow eager
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


def run_torch(x, y):
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

    return loop(step, len(x), sync=lambda loss: loss.item())


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
    elif which in ("tf", "tf-eager"):
        out = run_tf(x, y, compiled=which == "tf")
    else:
        sys.exit(f"unknown peer {which!r}: torch, tf or tf-eager")
    print(json.dumps({"peer": which, **out}))


if __name__ == "__main__":
    main()
