#!/usr/bin/env python3
"""A parallel search's leases against its budget, from its sweep.json.

    scripts/leases.py SWEEP_DIR

Prints the budget, the smallest and largest lease, the most the running trials leased at once
and the most trials at once (checked at every run's start, from each trial's `runs`, or its
`started_s`/`ended_s`), the trials' statuses, and the highest peak in use as a share of its
lease.
"""

import json
import os
import sys
from collections import Counter

MIB = 1024 * 1024


def main():
    with open(os.path.join(sys.argv[1], "sweep.json")) as f:
        result = json.load(f)
    trials = result["trials"]
    runs = []
    for t in trials:
        spans = t.get("runs") or [[t["started_s"], t["ended_s"]]]
        runs += [(start, end, t["lease_bytes"]) for start, end in spans]
    held = [[r for r in runs if r[0] <= at < r[1]] for at, _, _ in runs]
    leases = [t["lease_bytes"] for t in trials]
    peaks = [t["memory"]["peak_bytes_in_use"] / t["lease_bytes"] for t in trials if t["memory"]]
    print(f"budget {result['budget_bytes'] / MIB:.1f} MiB; leases {min(leases) / MIB:.1f} to "
          f"{max(leases) / MIB:.1f} MiB; at most {max(sum(r[2] for r in h) for h in held) / MIB:.1f} "
          f"MiB leased and {max(len(h) for h in held)} trials at once")
    print(f"statuses: {dict(Counter(t['status'] for t in trials))}; highest peak in use "
          f"{100 * max(peaks):.0f}% of its lease")


if __name__ == "__main__":
    main()
