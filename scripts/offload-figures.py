#!/usr/bin/env python3
"""Offload against the same training without it, on a device with pools.

    scripts/offload-figures.py [CONFIG] [-- EXTRA ARGS]

Trains CONFIG (default configs/mlp-parameters.toml) four times on wgpu, under
/tmp/offload-figures/: as one large batch of 4 x 256, as 4 micro-batches of 256 summed on the
device, as 4 micro-batches of 256 summed in host memory (train.offload.gradients = "host"), and
so with the optimizer's state and update in host memory too (train.offload.optimizer = "host").
Prints, per run, the device's highest peak in use (the pools' figure), the training loss of each
epoch, the largest difference of those losses from the device-summed run's, the training
samples per second (the mean over the epochs), and the time per sample against the device sum's
(the step-time ratio). EXTRA ARGS go to every run. The binary is
target/release/tidemark (or $TIDEMARK), built with --features wgpu.
"""

import json
import os
import subprocess
import sys

EXE = os.environ.get("TIDEMARK", "target/release/tidemark")
OUT = "/tmp/offload-figures"
MIB = 1024 * 1024

RUNS = [
    ("large batch 1024", ["train.batch_size=1024", "train.accumulation_steps=1"]),
    ("4 x 256, summed on the device", ["train.batch_size=256", "train.accumulation_steps=4"]),
    ("4 x 256, summed on the host", ["train.batch_size=256", "train.accumulation_steps=4",
                                     'train.offload.gradients="host"']),
    ("4 x 256, sum and optimizer on the host", [
        "train.batch_size=256", "train.accumulation_steps=4",
        'train.offload.gradients="host"', 'train.offload.optimizer="host"']),
]


def train(config, name, sets, extra):
    args = [EXE, "train", "--config", config, "--out", OUT, "--quiet",
            "--set", "device.backend=wgpu", "--set", f"run.name={name}"]
    for s in sets:
        args += ["--set", s]
    subprocess.run(args + extra, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(OUT, name, "snapshots.jsonl")) as f:
        epochs = [s for s in map(json.loads, f) if s["event"] == "epoch"]
    peak = max(s["peak_bytes_in_use"] for s in epochs)
    speed = sum(s["samples_per_sec"] for s in epochs) / len(epochs)
    return peak, [s["loss"] for s in epochs], speed


def main():
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    config = argv[0] if argv else "configs/mlp-parameters.toml"
    subprocess.run(["rm", "-rf", OUT], check=True)
    results = [(label, *train(config, f"run-{i}", sets, extra))
               for i, (label, sets) in enumerate(RUNS)]
    base = results[1][2]
    base_speed = results[1][3]
    print("| run | device peak in use | losses by epoch | from the device sum's | samples/s "
          "| step time against the device sum's |")
    print("|---|---|---|---|---|---|")
    for label, peak, losses, speed in results:
        diff = max(abs(a - b) for a, b in zip(losses, base))
        shown = ", ".join(f"{loss:.6f}" for loss in losses)
        print(f"| {label} | {peak / MIB:.1f} MiB | {shown} | {diff:.1e} | {speed:.0f} "
              f"| {base_speed / speed:.2f}x |")


if __name__ == "__main__":
    main()
