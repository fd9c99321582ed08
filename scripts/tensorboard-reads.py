#!/usr/bin/env python3
"""TensorBoard's own reader on a run's event files (docs/training.md, "TensorBoard").

    scripts/tensorboard-reads.py RUN_DIR [RUN_DIR ...]

For each run directory, loads its event files with TensorBoard's EventAccumulator (as
`tensorboard --logdir` does, orphaned steps of a resumed run purged) and checks that each
epoch's scalars equal the run's snapshots.jsonl: the loss, val_loss, the val metrics, the lr and
the memory figures, at the epoch's global step. Exits 1 on the first difference.
"""

import json
import os
import struct
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

MIB = 1024.0 * 1024.0


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def epochs(run_dir):
    """The epoch snapshots as the run stands: a resumed epoch's later line replaces it."""
    by_epoch = {}
    with open(os.path.join(run_dir, "snapshots.jsonl")) as f:
        for line in f:
            s = json.loads(line)
            if s["event"] == "epoch":
                by_epoch[s["epoch"]] = s
    return [by_epoch[e] for e in sorted(by_epoch)]


def check(run_dir):
    acc = EventAccumulator(run_dir)
    acc.Reload()
    tags = acc.Tags()["scalars"]
    scalars = {t: {e.step: e.value for e in acc.Scalars(t)} for t in tags}
    snaps = epochs(run_dir)
    for s in snaps:
        expected = {"loss": s["loss"], "val_loss": s["val_loss"], "lr": s["lr"],
                    "memory/in_use_mib": s["bytes_in_use"] / MIB,
                    "memory/peak_mib": s["peak_bytes_in_use"] / MIB,
                    "memory/reserved_mib": s["bytes_reserved"] / MIB}
        expected.update({k: v for k, v in s.items() if k.startswith("val_") and k != "val_loss"})
        for tag, value in expected.items():
            got = scalars.get(tag, {}).get(s["step"])
            if got != f32(value):
                sys.exit(f"{run_dir}: {tag} at step {s['step']}: TensorBoard reads {got}, "
                         f"snapshots.jsonl has {value}")
    # Each tag holds the run's epochs once: none left over from before a resume.
    for tag in ("loss", "val_loss"):
        steps = sorted(scalars[tag])
        if steps != [s["step"] for s in snaps]:
            sys.exit(f"{run_dir}: {tag} at steps {steps}, the epochs end at "
                     f"{[s['step'] for s in snaps]}")
    steps = len(scalars.get("step/loss", {}))
    per_epoch = len([t for t in tags if not t.startswith("step/")])
    print(f"tensorboard reads {run_dir}: {len(snaps)} epochs x {per_epoch} scalars as "
          f"snapshots.jsonl holds them, and {steps} logged steps")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip())
    for run_dir in sys.argv[1:]:
        check(run_dir)


if __name__ == "__main__":
    main()
