#!/usr/bin/env bash
# The memory advisor's estimates against measurement: for each workload, one run as configured
# (its summary.json's `advice` lists the levers, each with the `--set` changes that apply it
# and the bytes it would save on the training peak), then one run per lever with those
# changes. Prints a Markdown table: estimate, measurement, and whether they agree within 15%
# of the measured saving (or within 1% of the peak: a change that small is below run-to-run
# noise, and the advisor calls it one that cannot help). Exits 1 if any row disagrees.
#
#   scripts/advisor-check.sh [BIN=target/release/tidemark] [--set KEY=VALUE ...] [CONFIG...]
#
# `--set` changes every run of the configs (`--set data.samples=2048`: fewer steps an epoch, for
# a quicker check of the same model; CI's way with the parameter-heavy MLP).
# The training peak is the highest epoch's (steps and validation; a checkpoint's write is
# checked on its own). One epoch per run; the levers are measured on flex. Takes ~4 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/tidemark}
shift || true
common=()
while [ "${1:-}" = --set ]; do
  common+=(--set "${2:?--set needs KEY=VALUE}")
  shift 2
done
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(configs/bench/w1.toml configs/bench/w2.toml
  configs/bench/w3.toml configs/mlp-activations.toml configs/mlp-parameters.toml)
[ -x "$bin" ] || { echo "error: $bin is not an executable (cargo build --release)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

train() { # NAME CONFIG [--set K=V ...]; prints the run's training peak
  local name=$1 config=$2
  shift 2
  "$bin" train --config "$config" --out "$out" --quiet --set "run.name=$name" \
    --set train.epochs=1 "${common[@]}" "$@" </dev/null >/dev/null
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["advice"]["peak"])' \
    "$out/$name/summary.json"
}

levers() { # NAME; one line per lever: its name, its saving, its `--set` changes, tab-separated
  python3 - "$out/$1/summary.json" <<'PY'
import json, sys
for lever in json.load(open(sys.argv[1]))["advice"]["levers"]:
    print("\t".join([lever["lever"], str(lever["saves"])] + lever["set"]))
PY
}

mib() { awk -v b="$1" 'BEGIN { s = sprintf("%.1f", b / 1048576); print (s == "-0.0" ? "0.0" : s) }'; }

failed=0
echo "| workload | lever | estimated saving | measured saving | agree |"
echo "|---|---|---:|---:|:---:|"
for config in "${configs[@]}"; do
  w=$(basename "$config" .toml)
  peak=$(train "$w" "$config")
  while IFS=$'\t' read -r lever est rest; do
    sets=()
    IFS=$'\t' read -ra changes <<<"$rest"
    for c in "${changes[@]}"; do sets+=(--set "$c"); done
    i=$((${i:-0} + 1))
    with=$(train "$w-$i" "$config" "${sets[@]}")
    meas=$((peak - with))
    agree=$(awk -v e="$est" -v m="$meas" -v p="$peak" 'BEGIN {
      d = e - m; if (d < 0) d = -d; a = m < 0 ? -m : m
      print (d <= 0.15 * a || d <= 0.01 * p) ? "yes" : "NO" }')
    [ "$agree" = yes ] || failed=1
    echo "| $w ($(mib "$peak") MiB) | $lever | $(mib "$est") MiB | $(mib "$meas") MiB | $agree |"
  done < <(levers "$w")
done
exit $failed
