#!/usr/bin/env bash
# Two tidemark binaries on one workload in interleaved pairs (A B A B ...), as ratios: the way
# docs/performance.md compares a change against the build before it. Not part of CI.
#
#   scripts/ab.sh BIN_A BIN_B [PAIRS=12] [CONFIG=configs/bench/w1.toml] [RUNS]
#
# Per run: the last epoch's milliseconds per step (the time for one step's samples at the
# epoch's samples_per_sec, from the run's snapshots), the whole process's wall seconds, and the run's peak heap in use and peak resident
# set (from its summary.json). Prints every pair, then the medians and the pair-by-pair ratio
# A/B (median, min, max): pairing keeps the ratio meaningful when the machine's speed drifts.
# With RUNS, each process is `sweep --runs RUNS` of the config (its runs one after another in
# it): the median of its runs' last-epoch steps, its wall seconds, and the highest of its runs'
# peaks.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  echo "usage: scripts/ab.sh BIN_A BIN_B [PAIRS] [CONFIG] [RUNS]" >&2
  exit 2
fi
a=$1 b=$2 pairs=${3:-12} config=${4:-configs/bench/w1.toml} runs=${5:-}
for bin in "$a" "$b"; do
  [ -x "$bin" ] || { echo "error: $bin is not an executable" >&2; exit 2; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() { # LABEL BIN PAIR
  local start end
  start=$(date +%s.%N)
  if [ -z "$runs" ]; then
    "$2" train --config "$config" --out "$out" --quiet --set "run.name=$1-$3" >/dev/null
  else
    "$2" sweep --config "$config" --runs "$runs" --out "$out" --set "run.name=$1-$3" \
      >/dev/null 2>"$out/$1-$3.log" || { cat "$out/$1-$3.log" >&2; exit 1; }
  fi
  end=$(date +%s.%N)
  python3 - "$out/$1-$3" "$1" "$3" "$start" "$end" >>"$out/rows.jsonl" <<'PY'
import glob, json, os, statistics, sys
run, label, pair, start, end = sys.argv[1:]
steps, peaks, rss = [], [], []
for d in [run] if os.path.isdir(run) else sorted(glob.glob(f"{run}-sweep/trial-*")):
    epochs = [json.loads(l) for l in open(f"{d}/snapshots.jsonl") if '"event":"epoch"' in l]
    summary = json.load(open(f"{d}/summary.json"))
    steps.append(summary["micro_batch"] * summary["accumulation_steps"] * 1e3
                 / epochs[-1]["samples_per_sec"])
    peaks.append(summary["peak_bytes_in_use"])
    rss.append(summary["rss_peak_bytes"])
print(json.dumps({
    "label": label, "pair": int(pair),
    "ms_per_step": statistics.median(steps),
    "wall_s": float(end) - float(start),
    "peak_in_use": max(peaks),
    "rss_peak": max(rss),
}))
PY
}

for p in $(seq "$pairs"); do
  run A "$a" "$p"
  run B "$b" "$p"
  echo "pair $p/$pairs done" >&2
done

python3 - "$out/rows.jsonl" "$a" "$b" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {(r["label"], r["pair"]): r for r in rows}
pairs = sorted({r["pair"] for r in rows})
print(f"A = {sys.argv[2]}\nB = {sys.argv[3]}\n")
print("| pair | A ms/step | B ms/step | A/B |")
print("|---|---|---|---|")
for p in pairs:
    a, b = by[("A", p)], by[("B", p)]
    print(f"| {p} | {a['ms_per_step']:.2f} | {b['ms_per_step']:.2f} | "
          f"{a['ms_per_step'] / b['ms_per_step']:.3f} |")
print()
print("| median | A | B | A/B pair by pair: median (min-max) |")
print("|---|---|---|---|")
for key, unit, scale in [("ms_per_step", "ms", 1), ("wall_s", "s", 1),
                         ("peak_in_use", "MiB", 2**20), ("rss_peak", "MiB", 2**20)]:
    a = [by[("A", p)][key] for p in pairs]
    b = [by[("B", p)][key] for p in pairs]
    ratios = [x / y for x, y in zip(a, b)]
    print(f"| {key} ({unit}) | {statistics.median(a) / scale:.2f} | "
          f"{statistics.median(b) / scale:.2f} | {statistics.median(ratios):.3f} "
          f"({min(ratios):.3f}-{max(ratios):.3f}) |")
PY
