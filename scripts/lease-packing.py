#!/usr/bin/env python3
"""Eight independent `tidemark train` processes under one device budget, against the best
packing of the same runs (docs/memory.md, "One device, many runs").

    scripts/lease-packing.py [--bin target/release/tidemark] [--epochs 20] [--runs 8] [--fresh]

Each run (W1's shape scaled down: `hidden` from the list below, 2,048 synthetic samples) is
trained alone first, under a budget that holds it: its lease (the run's `limit_bytes`) and its
process's wall time. The budget is three times the mean lease. Then all start at once under it,
and the script prints:

- the most the leases held at once, read from the registry under its admission lock every
  5 ms, against the budget;
- each run's loss against its loss alone, and its peak in use against its lease;
- the wall time of all of them, from the first start to the last exit, against the best
  packing of the same runs: each run's time is how long it held its lease in this very run
  (from the first time the registry shows it to the last: its training, not its probe or its
  waits), its size that lease; the best packing is the shortest makespan of any order in which
  each run starts as soon as the runs before it leave room (every order of 8 runs is tried).
  Run times come from the same runs, so what the machine's cores do to runs side by side is in
  both figures, and the ratio is what the registry's order, its waits and the probes cost.

The runs alone leave in the registry what it remembers of each shape of run (its lease and its
time an epoch), so that the runs together probe under their own leases and the longest goes
first. `--fresh` starts them together on a registry of their own instead, one that has seen
none of them: each probes under a lease the size of the largest on the device, and they go in
the order they asked.

Nothing here is timed by a test: the ratio is the figure docs/memory.md records.
"""

import argparse
import fcntl
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HIDDEN = ["[64]", "[128]", "[256]", "[512]", "[64, 64]", "[256, 256]", "[512, 256]", "[512, 512]"]

CONFIG = """[run]
name = "{name}"
seed = 1

[model]
hidden = {hidden}

[data]
kind = "synthetic"
samples = 2048
features = 64
classes = 4

[train]
epochs = {epochs}
batch_size = 64
lr = 0.003
"""


def leased(device_dir):
    """The leases held now, {(pid, probe): bytes}, read under the admission lock."""
    try:
        lock = open(os.path.join(device_dir, "admit.lock"), "a")
    except OSError:
        return {}
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        held = {}
        for name in os.listdir(device_dir):
            if name.startswith("lease-"):
                try:
                    with open(os.path.join(device_dir, name)) as f:
                        record = json.loads(f.readline())
                    key = (record["pid"], record["probe"])
                    held[key] = held.get(key, 0) + record["bytes"]
                except (OSError, ValueError):
                    pass
        return held


def best_packing(jobs, budget):
    """The shortest makespan of any list schedule of `jobs` ((seconds, bytes)) under `budget`."""
    best = float("inf")
    for order in itertools.permutations(range(len(jobs))):
        running = []  # (end, bytes)
        now = 0.0
        for j in order:
            secs, size = jobs[j]
            running.sort()
            while sum(b for _, b in running) + size > budget:
                now = max(now, running[0][0])
                running.pop(0)
            running.append((now + secs, size))
        best = min(best, max(end for end, _ in running))
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/debug/tidemark")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--fresh", action="store_true",
                    help="the runs together on a registry that has seen none of them")
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)
    work = tempfile.mkdtemp(prefix="lease-packing-")
    env = dict(os.environ, TIDEMARK_LEASES=os.path.join(work, "leases"))
    names = [f"r{i}" for i in range(args.runs)]
    for name, hidden in zip(names, HIDDEN):
        with open(os.path.join(work, f"{name}.toml"), "w") as f:
            f.write(CONFIG.format(name=name, hidden=hidden, epochs=args.epochs))

    def summary(path):
        with open(os.path.join(work, path, "summary.json")) as f:
            return json.load(f)

    alone = {}
    for name in names:
        start = time.monotonic()
        subprocess.run([binary, "train", "--config", f"{name}.toml", "--quiet", "--set",
                        "run.output_dir=alone"], cwd=work, check=True, stdout=subprocess.DEVNULL,
                       env=dict(env, TIDEMARK_DEVICE_BUDGET="host=8GiB"))
        s = summary(f"alone/{name}")
        alone[name] = (time.monotonic() - start, s["limit_bytes"], s["final_loss"])
    budget = int(3 * sum(a[1] for a in alone.values()) / len(alone))
    if args.fresh:
        env["TIDEMARK_LEASES"] = os.path.join(work, "fresh-leases")
    most = [0]
    seen = {}  # pid: (first, last) time its run's lease was held (not the one it probed under)
    done = threading.Event()

    def poll():
        while not done.is_set():
            now = time.monotonic()
            held = leased(os.path.join(env["TIDEMARK_LEASES"], "host"))
            most[0] = max(most[0], sum(held.values()))
            for pid, probe in held:
                if not probe:
                    first, _ = seen.get(pid, (now, now))
                    seen[pid] = (first, now)
            time.sleep(0.005)

    poller = threading.Thread(target=poll)
    poller.start()
    start = time.monotonic()
    children = [subprocess.Popen([binary, "train", "--config", f"{name}.toml", "--quiet"],
                                 cwd=work, stdout=subprocess.DEVNULL,
                                 env=dict(env, TIDEMARK_DEVICE_BUDGET=f"host={budget}"))
                for name in names]
    codes = [c.wait() for c in children]
    wall = time.monotonic() - start
    done.set()
    poller.join()
    mib = 1 << 20
    registry = "a fresh registry" if args.fresh else "the registry that saw them alone"
    print(f"{args.runs} runs, {args.epochs} epochs each; budget {budget / mib:.1f} MiB "
          f"(3x the mean lease), on {registry}; exit codes {codes}")
    print(f"most leased at once: {most[0] / mib:.1f} MiB ({100 * most[0] / budget:.0f}% of the budget)")
    print("run  lease MiB  alone s  held here s  from s  loss alone  loss here  peak/lease")
    jobs = []
    for name, child in zip(names, children):
        s = summary(f"runs/{name}")
        secs, lease, loss = alone[name]
        first, last = seen.get(child.pid, (0.0, 0.0))
        jobs.append((last - first, s["limit_bytes"]))
        print(f"{name}   {lease / mib:9.1f}  {secs:7.2f}  {last - first:11.2f}  {first - start:6.2f}  {loss:10.6f}  "
              f"{s['final_loss']:9.6f}  {s['peak_bytes_in_use'] / s['limit_bytes']:10.2f}")
    best = best_packing(jobs, budget)
    print(f"wall {wall:.2f} s; best packing of the same runs {best:.2f} s; ratio {wall / best:.3f} "
          f"(their held times one after another: {sum(j[0] for j in jobs):.2f} s)")
    if all(c == 0 for c in codes):
        shutil.rmtree(work)
        sys.exit(0)
    print(f"the runs are in {work}")
    sys.exit(1)


if __name__ == "__main__":
    main()
