#!/usr/bin/env python3
"""How a sweep's process grew from trial to trial, from its trials' summary.json files.

    scripts/sweep-slope.py SWEEP_DIR [TRIAL ...]

Prints the resident set after the release of each named trial, counted in the order the process
trained them (each summary's `run_in_process`; default 100, 1000, 5000, 10000), the most any
trial after the first kept in use, and the least-squares slope, in bytes a trial from trial
100 on, of the resident set (`rss_after_bytes`) and of its anonymous part (the baseline's
`baseline_bytes_reserved` plus `retained_bytes_reserved`).
"""

import glob
import json
import os
import sys


def slope(points):
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxy = sum((x - mx) * (y - my) for x, y in points)
    return sxy / sum((x - mx) ** 2 for x, _ in points)


def main():
    sweep, marks = sys.argv[1], [int(a) for a in sys.argv[2:]] or [100, 1000, 5000, 10000]
    rows = []
    for path in glob.glob(os.path.join(sweep, "trial-*", "summary.json")):
        s = json.load(open(path))
        anon = s["baseline_bytes_reserved"] + s["retained_bytes_reserved"]
        rows.append((s["run_in_process"], s["rss_after_bytes"], anon, s["retained_bytes_in_use"]))
    rows.sort()
    mib = 1 << 20
    for mark in marks:
        if mark <= len(rows):
            print(f"trial {mark}: resident set {rows[mark - 1][1] / mib:.2f} MiB")
    kept = max(r[3] for r in rows[1:])
    print(f"trials: {len(rows)}; most kept in use by a trial after the first: {kept} B")
    settled = rows[99:]
    rss = slope([(r[0], r[1]) for r in settled])
    anon = slope([(r[0], r[2]) for r in settled])
    print(f"slope from trial 100: resident set {rss:+.1f} B a trial, anonymous {anon:+.1f} B a trial")


main()
