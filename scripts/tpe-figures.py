#!/usr/bin/env python3
"""TPE against random search, over several seeds, from their sweep.json files.

    scripts/tpe-figures.py CONFIG SEED [SEED ...] [-- EXTRA ARGS]

For each seed, runs `tidemark sweep --config CONFIG --set sweep.seed=SEED` with
`sweep.method` "tpe" and "random" (the same number of trials; under /tmp/tpe-figures/), and
prints each search's best value, then the mean best of each method over the seeds. EXTRA ARGS
go to every sweep.
"""

import json
import os
import subprocess
import sys

EXE = os.environ.get("TIDEMARK", "target/release/tidemark")


def best(config, seed, method, extra):
    out = f"/tmp/tpe-figures/{method}-{seed}"
    subprocess.run(["rm", "-rf", out], check=True)
    args = [EXE, "sweep", "--config", config, "--out", out, "--set", f"sweep.seed={seed}",
            "--set", f'sweep.method="{method}"'] + extra
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    (sweep,) = [d for d in os.listdir(out) if d.endswith("-sweep")]
    with open(os.path.join(out, sweep, "sweep.json")) as f:
        result = json.load(f)
    rows = result["trials"]
    top = next(r for r in rows if r.get("rank") == 1)
    return top["monitored"], len(rows), result["mode"]


def main():
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    config, seeds = argv[0], [int(s) for s in argv[1:]]
    print("| seed | trials | random: best | tpe: best | tpe better by |")
    print("|---|---|---|---|---|")
    sums = {"random": 0.0, "tpe": 0.0}
    for seed in seeds:
        r, n, mode = best(config, seed, "random", extra)
        t, _, _ = best(config, seed, "tpe", extra)
        sums["random"] += r
        sums["tpe"] += t
        gain = (r - t) if mode == "min" else (t - r)
        print(f"| {seed} | {n} | {r:.4f} | {t:.4f} | {gain:+.4f} |", flush=True)
    k = len(seeds)
    r, t = sums["random"] / k, sums["tpe"] / k
    gain = (r - t) if mode == "min" else (t - r)
    print(f"| mean | | {r:.4f} | {t:.4f} | {gain:+.4f} |")


if __name__ == "__main__":
    main()
