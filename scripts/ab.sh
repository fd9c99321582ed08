#!/usr/bin/env bash
# Two tidemark binaries on one workload in interleaved pairs (A B A B ...), as ratios: the way
# docs/performance.md compares a change against the build before it. Not part of CI.
#
#   scripts/ab.sh BIN_A BIN_B [PAIRS=12] [CONFIG=configs/bench/w1.toml]
#
# Per run: the last epoch's milliseconds per step (the time for one step's samples at the
# epoch's samples_per_sec, from the run's snapshots), the whole process's wall seconds, and the run's peak heap in use and peak resident
# set (from its summary.json). Prints every pair, then the medians and the pair-by-pair ratio
# A/B (median, min, max): pairing keeps the ratio meaningful when the machine's speed drifts.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  echo "usage: scripts/ab.sh BIN_A BIN_B [PAIRS] [CONFIG]" >&2
  exit 2
fi
a=$1 b=$2 pairs=${3:-12} config=${4:-configs/bench/w1.toml}
for bin in "$a" "$b"; do
  [ -x "$bin" ] || { echo "error: $bin is not an executable" >&2; exit 2; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() { # LABEL BIN PAIR
  local start end
  start=$(date +%s.%N)
  "$2" train --config "$config" --out "$out" --quiet --set "run.name=$1-$3" >/dev/null
  end=$(date +%s.%N)
  python3 - "$out/$1-$3" "$1" "$3" "$start" "$end" >>"$out/rows.jsonl" <<'PY'
import json, sys
run, label, pair, start, end = sys.argv[1:]
epochs = [json.loads(l) for l in open(f"{run}/snapshots.jsonl") if '"event":"epoch"' in l]
summary = json.load(open(f"{run}/summary.json"))
print(json.dumps({
    "label": label, "pair": int(pair),
    "ms_per_step": summary["micro_batch"] * summary["accumulation_steps"] * 1e3
    / epochs[-1]["samples_per_sec"],
    "wall_s": float(end) - float(start),
    "peak_in_use": summary["peak_bytes_in_use"],
    "rss_peak": summary["rss_peak_bytes"],
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
