#!/usr/bin/env python3
"""A pruned search against the same search unpruned, from their sweep.json files.

    scripts/prune-figures.py CONFIG [SEED ...] [-- EXTRA ARGS]

For each sweep seed (default: the config's own), runs `tidemark sweep --config CONFIG` three
times over the same trials: with `sweep.prune.method` "none", "asha" and "median" (under
/tmp/prune-figures/), then prints, per method, the best value among the trials that trained to
their last epoch, its distance from the unpruned best, and the epochs trained in all, as a share
of the unpruned search's. EXTRA ARGS go to every sweep (e.g. `--parallel 2`).
"""

import json
import os
import subprocess
import sys

EXE = os.environ.get("TIDEMARK", "target/release/tidemark")


def run(config, seed, method, extra):
    out = f"/tmp/prune-figures/{method}-{seed}"
    subprocess.run(["rm", "-rf", out], check=True)
    args = [EXE, "sweep", "--config", config, "--out", out,
            "--set", f'sweep.prune.method="{method}"'] + extra
    if seed is not None:
        args += ["--set", f"sweep.seed={seed}"]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    (sweep,) = [d for d in os.listdir(out) if d.endswith("-sweep")]
    with open(os.path.join(out, sweep, "sweep.json")) as f:
        result = json.load(f)
    rows = result["trials"]
    best = next(r for r in rows if r.get("rank") == 1)
    epochs = sum(r.get("epochs") or 0 for r in rows)
    statuses = {s: sum(r["status"] == s for r in rows) for s in ("completed", "pruned", "failed")}
    return best["monitored"], epochs, statuses, len(rows)


def main():
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    config, seeds = argv[0], [int(s) for s in argv[1:]] or [None]
    print("| seed | method | trials | completed | pruned | best (trained to the end) "
          "| from the unpruned best | epochs | of the unpruned epochs |")
    print("|---|---|---|---|---|---|---|---|---|")
    for seed in seeds:
        base_best, base_epochs = None, None
        for method in ("none", "asha", "median"):
            best, epochs, statuses, n = run(config, seed, method, extra)
            if method == "none":
                base_best, base_epochs = best, epochs
            print(f"| {seed if seed is not None else '-'} | {method} | {n} "
                  f"| {statuses['completed']} | {statuses['pruned']} | {best:.4f} "
                  f"| {best - base_best:+.4f} | {epochs} | {100 * epochs / base_epochs:.0f}% |",
                  flush=True)


if __name__ == "__main__":
    main()
