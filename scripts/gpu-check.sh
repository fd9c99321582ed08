#!/usr/bin/env bash
# GPU runbook for tidemark: on a machine with an NVIDIA GPU, build with `--features cuda`, run
# the memory policies on CUDA, and write every command and its output to one results file.
#
#   scripts/gpu-check.sh [--out FILE]   # on a GPU machine (driver installed; no CUDA toolkit needed)
#   scripts/gpu-check.sh --no-gpu       # only the steps that need no GPU (CI runs this)
#
# Building `cuda` needs cubecl-llvm's prebuilt LLVM, which its build script downloads. Without
# internet access, `../shared/scripts/llvm22-standin.sh` (see ../shared/notes/llvm.md) installs
# Debian's LLVM 22 in its place; that route is unsupported for users.
set -uo pipefail
cd "$(dirname "$0")/.."

gpu=1
out="gpu-check-$(date +%Y%m%d-%H%M%S).txt"
while [ $# -gt 0 ]; do
  case "$1" in
    --no-gpu) gpu=0 ;;
    --out) out="$2"; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done

failures=0
# Runs a step, appends its command and output to the results file, and counts failures.
# `expect` is the exit code the step should end with.
run() {
  local expect="$1"; shift
  printf '\n$ %s\n' "$*" | tee -a "$out"
  "$@" 2>&1 | tee -a "$out"
  local code=${PIPESTATUS[0]}
  if [ "$code" -ne "$expect" ]; then
    echo "!! exit $code, expected $expect" | tee -a "$out"
    failures=$((failures + 1))
  fi
}

echo "tidemark GPU check, $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)" | tee "$out"

# No GPU needed: the CUDA code type-checks. DOCS_RS makes cubecl-llvm skip its LLVM download.
run 0 env DOCS_RS=1 cargo check --features cuda --all-targets

if [ "$gpu" -eq 1 ]; then
  run 0 nvidia-smi
  run 0 cargo build --release --features cuda
  bin=target/release/tidemark
  cuda=(--set device.backend=cuda)
  # The quickstart on CUDA: snapshots come from the device pools (source = "cubecl-pool").
  run 0 "$bin" train --config configs/quickstart.toml "${cuda[@]}" --out gpu-runs
  # Preallocation: run_start shows the reservation; reserved should not rise above it
  # (CUDA has no uniform/staging pools, unlike wgpu).
  run 0 "$bin" train --config configs/preallocate.toml "${cuda[@]}" --out gpu-runs
  # The limit on pool figures: fail (exit 3) and shrink.
  run 3 "$bin" train --config configs/limit-fail.toml "${cuda[@]}" --out gpu-runs
  run 0 "$bin" train --config configs/limit-shrink.toml "${cuda[@]}" --out gpu-runs
  # Clearing between runs against never, ten runs each.
  run 0 "$bin" sweep --config configs/sweep.toml --runs 10 "${cuda[@]}" --out gpu-runs/between
  run 0 "$bin" sweep --config configs/sweep.toml --runs 10 --set memory.clear=never "${cuda[@]}" --out gpu-runs/never
  # The memory tests of the test suite (flex, and wgpu if an adapter exists) with cuda built in.
  run 0 cargo test --release --features cuda
  for f in gpu-runs/*/snapshots.jsonl; do
    printf '\n# %s\n' "$f" >> "$out"
    cat "$f" >> "$out"
  done
fi

echo
echo "gpu-check: $failures step(s) failed; results in $out" | tee -a "$out"
[ "$failures" -eq 0 ]
