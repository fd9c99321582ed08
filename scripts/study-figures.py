#!/usr/bin/env python3
"""A study shared by workers against one process, over several seeds (docs/cluster.md).

    scripts/study-figures.py tpe CONFIG SEED [SEED ...]     # default: 4 workers
    scripts/study-figures.py asha CONFIG SEED [SEED ...]
    scripts/study-figures.py median CONFIG SEED [SEED ...]
    --workers N    workers sharing the study (each its own process)
    --parallel P   trials each worker trains at once, in child processes under leases
                   (`--set sweep.parallel=P`; default 1: in the worker's own process)

tpe: for each seed, a TPE search (`--set sweep.seed=SEED`) trained by one process (`tidemark
sweep`, no storage), then by N workers sharing one journal file (`--storage`); prints each
one's best value and wall time, then the means.
asha: for each seed, the search unpruned in one process (`sweep.prune.method = "none"`), then
with its ASHA pruner across N workers; prints each one's best (among trials trained to the
end), its distance from the unpruned best, and the epochs it trained.
median: the same with the median rule (`--set sweep.prune.method="median"`), in one process
and across N workers.

Runs under /tmp/study-figures/ with target/release/tidemark (or $TIDEMARK).
"""

import json
import os
import subprocess
import sys
import time

EXE = os.environ.get("TIDEMARK", "target/release/tidemark")
ROOT = "/tmp/study-figures"


def sweep_json(out):
    (sweep,) = [d for d in os.listdir(out) if d.endswith("-sweep")]
    with open(os.path.join(out, sweep, "sweep.json")) as f:
        return json.load(f)


def one_process(config, seed, name, extra):
    out = f"{ROOT}/{name}-{seed}"
    subprocess.run(["rm", "-rf", out], check=True)
    start = time.time()
    subprocess.run([EXE, "sweep", "--config", config, "--out", out, "--set", f"sweep.seed={seed}"]
                   + extra, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return sweep_json(out), time.time() - start


def workers(config, seed, name, n, extra):
    out = f"{ROOT}/{name}-{seed}"
    subprocess.run(["rm", "-rf", out], check=True)
    os.makedirs(out)
    journal = f"{out}/journal.log"
    start = time.time()
    procs = [subprocess.Popen([EXE, "sweep", "--config", config, "--out", out, "--set",
                               f"sweep.seed={seed}", "--storage", journal] + extra,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for _ in range(n)]
    for p in procs:
        if p.wait() != 0:
            sys.exit(f"a worker of {name} seed {seed} failed (exit {p.returncode})")
    return sweep_json(out), time.time() - start


def best(result):
    done = [r["monitored"] for r in result["trials"] if r["status"] == "completed"]
    return (min if result["mode"] == "min" else max)(done)


def epochs(result):
    return sum(r.get("epochs") or 0 for r in result["trials"])


def tpe(config, seeds, n, extra):
    print(f"| seed | one process: best | wall | {n} workers: best | wall |")
    print("|---|---|---|---|---|")
    sums = [0.0, 0.0, 0.0, 0.0]
    for seed in seeds:
        one, t1 = one_process(config, seed, "tpe-one", [])
        many, tn = workers(config, seed, f"tpe-{n}", n, extra)
        row = [best(one), t1, best(many), tn]
        sums = [s + x for s, x in zip(sums, row)]
        print(f"| {seed} | {row[0]:.4f} | {t1:.0f} s | {row[2]:.4f} | {tn:.0f} s |", flush=True)
    k = len(seeds)
    print(f"| mean | {sums[0] / k:.5f} | {sums[1] / k:.0f} s | {sums[2] / k:.5f} | "
          f"{sums[3] / k:.0f} s |")


def pruned(method, config, seeds, n, extra):
    print(f"| seed | search | completed | pruned | best | from the unpruned best | epochs | "
          "of the unpruned epochs |")
    print("|---|---|---|---|---|---|---|---|")
    label = {"asha": "ASHA", "median": "median rule"}[method]
    rule = ["--set", f'sweep.prune.method="{method}"']
    for seed in seeds:
        full, _ = one_process(config, seed, "unpruned", ["--set", 'sweep.prune.method="none"'])
        runs = [("unpruned, one process", full)]
        if method == "median":
            one, _ = one_process(config, seed, "median-one", rule)
            runs.append((f"{label}, one process", one))
        many, _ = workers(config, seed, f"{method}-{n}", n, extra + rule)
        runs.append((f"{label}, {n} workers", many))
        for label_of_run, r in runs:
            count = lambda s: sum(1 for t in r["trials"] if t["status"] == s)
            print(f"| {seed} | {label_of_run} | {count('completed')} | {count('pruned')} | "
                  f"{best(r):.4f} | {best(r) - best(full):+.4f} | {epochs(r)} | "
                  f"{100 * epochs(r) / epochs(full):.0f}% |", flush=True)


def main():
    args = sys.argv[1:]
    n = 4
    if "--workers" in args:
        i = args.index("--workers")
        n = int(args[i + 1])
        del args[i:i + 2]
    extra = []
    if "--parallel" in args:
        i = args.index("--parallel")
        extra = ["--set", f"sweep.parallel={int(args[i + 1])}"]
        del args[i:i + 2]
    if len(args) < 3 or args[0] not in ("tpe", "asha", "median"):
        sys.exit(__doc__.strip())
    what, config, seeds = args[0], args[1], [int(s) for s in args[2:]]
    if what == "tpe":
        tpe(config, seeds, n, extra)
    else:
        pruned(what, config, seeds, n, extra)


if __name__ == "__main__":
    main()
