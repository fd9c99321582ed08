#!/usr/bin/env python3
"""Each row of a `cargo bench` run against bare Burn, from every step it timed.

    TIDEMARK_BENCH_INTERVALS=/tmp/iv cargo bench -- w0
    scripts/bench-intervals.py /tmp/iv [--workload W0]

The bench's children write each process's step intervals (ms, in order) to the directory, one
file a process, named <workload>-<policy>-<nanoseconds>.txt. Each process is paired with the
bare Burn process that ended last before it: the bench runs its cases in rounds, bare Burn
first, so that is the bare process of its round (a case that failed in a round leaves no file
and shifts no other pair). For each pair this prints three ratios, policy over bare:

- the median step (what the table's "median step" compares);
- the mean step: the time per step of all the timed steps, as an epoch's figure counts it;
- the mean step without bursts: the same, leaving out every window of 100 steps whose median
  is over 1.2 times the process's median step. On a shared machine a neighbour's load slows a
  few hundred steps at a time, in either loop, at random places; those windows move a mean
  by tens of percent and a median hardly at all.

and then the median of each ratio over the pairs. Standard library only.
"""

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

WINDOW = 100
BURST = 1.2


def read(path):
    return [float(line) for line in path.read_text().split()]


def without_bursts(steps):
    """The steps outside the windows a burst of the machine's load slowed; the share kept."""
    median = statistics.median(steps)
    kept = []
    for start in range(0, len(steps), WINDOW):
        window = steps[start : start + WINDOW]
        if statistics.median(window) <= BURST * median:
            kept.extend(window)
    return kept, len(kept) / len(steps)


def mean_ratio(ours, base):
    """The ratio of two means; None where a side has no steps left."""
    return statistics.mean(ours) / statistics.mean(base) if ours and base else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, help="the directory TIDEMARK_BENCH_INTERVALS named")
    parser.add_argument("--workload", default="W0", help="the workload (default W0)")
    args = parser.parse_args()
    if not args.dir.is_dir():
        sys.exit(f"bench-intervals: {args.dir}: not a directory")
    runs = defaultdict(list)
    for path in args.dir.glob(f"{args.workload}-*.txt"):
        stem = path.stem[len(args.workload) + 1 :]
        policy, _, nanos = stem.rpartition("-")
        if policy and nanos.isdigit():
            runs[policy].append((int(nanos), path))
    bare = sorted(runs.pop("bare", []))
    if not bare or not runs:
        sys.exit(
            f"bench-intervals: {args.dir}: no {args.workload}-bare-*.txt with another policy's "
            "files beside it (run the bench with TIDEMARK_BENCH_INTERVALS set)"
        )
    for policy, files in sorted(runs.items()):
        ratios = defaultdict(list)
        print(f"{args.workload} {policy} against bare Burn, pair by pair")
        for k, (ended, path) in enumerate(sorted(files), start=1):
            before = [bare_path for bare_ended, bare_path in bare if bare_ended < ended]
            if not before:
                continue
            ours, base = read(path), read(before[-1])
            if not ours or not base:
                continue
            (ours_kept, ours_share), (base_kept, base_share) = map(without_bursts, (ours, base))
            pair = {
                "median": statistics.median(ours) / statistics.median(base),
                "mean": mean_ratio(ours, base),
                "mean without bursts": mean_ratio(ours_kept, base_kept),
            }
            for name, ratio in pair.items():
                if ratio is not None:
                    ratios[name].append(ratio)
            figures = ", ".join(
                f"{name} {'-' if ratio is None else f'{ratio:.3f}'}" for name, ratio in pair.items()
            )
            print(f"  {k}: {figures} (steps kept: {ours_share:.0%} and {base_share:.0%})")
        medians = ", ".join(
            f"{name} {statistics.median(values):.3f}" for name, values in ratios.items()
        )
        print(f"  median over {len(ratios['median'])} pairs: {medians}")


if __name__ == "__main__":
    main()
