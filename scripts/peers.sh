#!/usr/bin/env bash
# W1 side by side: tidemark (flex, release) against PyTorch eager and TensorFlow
# (tf.function with jit_compile=True, and eager), interleaved round by round in one run, as
# ratios. Not part of CI or `cargo test`.
#
#   scripts/peers.sh [ROUNDS=5]
#
# Installs the peers itself, once, into .venv-peers: torch from PyTorch's CPU index where that
# is reachable, else PyPI's wheel (which brings CUDA libraries: about 5 GiB, unused here), and
# tensorflow-cpu from PyPI. Each round runs every contestant once, in its
# own process, in the same order; the table gives each one's median over the rounds of
# epoch 2's milliseconds per 256-sample step (epoch wall time / steps, as tidemark's
# samples_per_sec), tidemark's ratio to it (of the medians, and round by round), and the
# peers' median single step (synchronised) beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
venv=.venv-peers
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q numpy
  "$venv/bin/pip" install -q torch --index-url https://download.pytorch.org/whl/cpu \
    || "$venv/bin/pip" install -q torch
  "$venv/bin/pip" install -q tensorflow-cpu || "$venv/bin/pip" install -q tensorflow
fi
# TIDEMARK_BIN: another tidemark binary to compare (default: this checkout's release build).
# TIDEMARK_BASE: a second tidemark binary (say, the build before a change), run in each round
# too and shown as "tidemark (base)".
bin=${TIDEMARK_BIN:-}
if [ -z "$bin" ]; then cargo build --release -q; bin=./target/release/tidemark; fi
base=${TIDEMARK_BASE:-}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export TF_CPP_MIN_LOG_LEVEL=2

tidemark() { # NAME BINARY ROUND
  "$2" train --config configs/bench/w1.toml --out "$out" --quiet \
    --set "run.name=$1-$3" >/dev/null
  python3 - "$out/$1-$3/snapshots.jsonl" "$1" >>"$out/rows.jsonl" <<'PY'
import json, sys
epochs = [json.loads(l) for l in open(sys.argv[1]) if '"event":"epoch"' in l]
print(json.dumps({"peer": sys.argv[2], "epoch_ms_per_step": 256e3 / epochs[-1]["samples_per_sec"]}))
PY
}

for r in $(seq "$rounds"); do
  tidemark tidemark "$bin" "$r"
  if [ -n "$base" ]; then tidemark tidemark-base "$base" "$r"; fi
  for peer in torch tf tf-eager; do
    # TensorFlow's start-up notices go to stderr before its log level applies.
    "$venv/bin/python" scripts/peers/w1.py "$peer" >>"$out/rows.jsonl" 2>"$out/$peer.err" \
      || { cat "$out/$peer.err" >&2; exit 1; }
  done
  echo "round $r/$rounds done" >&2
done

python3 - "$out/rows.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
# Each contestant runs once a round, in order: its i-th row is round i.
seen = {}
for r in rows:
    r["round"] = seen[r["peer"]] = seen.get(r["peer"], 0) + 1
ours = {r["round"]: r["epoch_ms_per_step"] for r in rows if r["peer"] == "tidemark"}
names = {"tidemark": "tidemark (flex)", "tidemark-base": "tidemark (base)",
         "torch": "PyTorch eager",
         "tf": "TensorFlow tf.function(jit_compile=True)", "tf-eager": "TensorFlow eager"}
def med(peer, key):
    values = [r[key] for r in rows if r["peer"] == peer and key in r]
    return statistics.median(values) if values else None
base = med("tidemark", "epoch_ms_per_step")
print("| W1 | epoch ms/step (median) | tidemark / this: medians | tidemark / this: round by round, median (min-max) | median single step |")
print("|---|---|---|---|---|")
for peer, name in names.items():
    epoch = med(peer, "epoch_ms_per_step")
    if epoch is None:
        continue
    step = med(peer, "median_step_ms")
    ratios = [ours[r["round"]] / r["epoch_ms_per_step"] for r in rows
              if r["peer"] == peer and r["round"] in ours]
    paired = f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
    print(f"| {name} | {epoch:.2f} | {base / epoch:.2f} | {paired} | "
          f"{'-' if step is None else f'{step:.2f}'} |")
PY
