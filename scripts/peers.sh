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
# samples_per_sec), and the peers' median single step (synchronised) beside it.
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
bin=${TIDEMARK_BIN:-}
if [ -z "$bin" ]; then cargo build --release -q; bin=./target/release/tidemark; fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export TF_CPP_MIN_LOG_LEVEL=2

for r in $(seq "$rounds"); do
  "$bin" train --config configs/bench/w1.toml --out "$out" --quiet \
    --set "run.name=w1-$r" >/dev/null
  python3 - "$out/w1-$r/snapshots.jsonl" >>"$out/rows.jsonl" <<'PY'
import json, sys
epochs = [json.loads(l) for l in open(sys.argv[1]) if '"event":"epoch"' in l]
print(json.dumps({"peer": "tidemark", "epoch_ms_per_step": 256e3 / epochs[-1]["samples_per_sec"]}))
PY
  for peer in torch tf tf-eager; do
    "$venv/bin/python" scripts/peers/w1.py "$peer" >>"$out/rows.jsonl"
  done
  echo "round $r/$rounds done" >&2
done

python3 - "$out/rows.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
names = {"tidemark": "tidemark (flex)", "torch": "PyTorch eager",
         "tf": "TensorFlow tf.function(jit_compile=True)", "tf-eager": "TensorFlow eager"}
def med(peer, key):
    values = [r[key] for r in rows if r["peer"] == peer and key in r]
    return statistics.median(values) if values else None
base = med("tidemark", "epoch_ms_per_step")
print("| W1 | epoch ms/step (median) | tidemark / this | median single step |")
print("|---|---|---|---|")
for peer, name in names.items():
    epoch = med(peer, "epoch_ms_per_step")
    step = med(peer, "median_step_ms")
    print(f"| {name} | {epoch:.2f} | {base / epoch:.2f} | {'-' if step is None else f'{step:.2f}'} |")
PY
