#!/usr/bin/env bash
# TensorBoard reads tidemark's event files (docs/training.md, "TensorBoard"): a run, the same
# run killed in its second epoch and resumed, and a search's trials, each read with
# TensorBoard's own EventAccumulator by scripts/tensorboard-reads.py and compared with the
# runs' snapshots.jsonl.
#
#   scripts/tensorboard-check.sh [TIDEMARK_BINARY]    # default: target/release/tidemark
#
# Installs TensorBoard from PyPI into a venv under a scratch directory.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(realpath "${1:-target/release/tidemark}")"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
python3 -m venv "$scratch/venv"
"$scratch/venv/bin/pip" install -q 'tensorboard==2.21.0'

run=(--config configs/quickstart.toml --set train.epochs=3 --set data.samples=4096
     --set run.tensorboard=true --set run.log_every_steps=20 --out "$scratch/runs")
"$bin" train "${run[@]}" --quiet
# Killed at its 60th step (in epoch 3: 26 steps an epoch), then resumed from epoch 2.
TIDEMARK_FAILPOINT=step:60:KILL TIDEMARK_FAILPOINT_COUNT="$scratch/count" \
  "$bin" train "${run[@]}" --set run.name=killed --quiet || [ $? -eq 137 ]
sleep 1.1
"$bin" train --resume "$scratch/runs/killed" --quiet
"$bin" sweep --config configs/search-grid.toml --set run.tensorboard=true \
  --set train.epochs=2 --out "$scratch/runs" > /dev/null
trials=("$scratch"/runs/*-sweep/trial-*)
"$scratch/venv/bin/python" scripts/tensorboard-reads.py \
  "$scratch/runs/quickstart" "$scratch/runs/killed" "${trials[@]}" 2>&1 | grep -v 'TensorFlow installation not found'
