#!/usr/bin/env bash
# GPU runbook for tidemark (docs/gpu-results.md; on a lent GPU run scripts/gpu-peers.sh first):
# on a machine with an NVIDIA GPU, build with `--features cuda`, run
# the memory policies on CUDA, and write every command and its output to one results file.
#
#   scripts/gpu-check.sh [--out FILE]   # on a GPU machine (driver installed; no CUDA toolkit needed)
#   scripts/gpu-check.sh --no-gpu       # only the steps that need no GPU (CI runs this)
#   scripts/gpu-check.sh --bin FILE [--wgpu]
#       # a binary built elsewhere (`--features cuda`, or `cuda,wgpu` with --wgpu), on a GPU
#       # machine with no Rust toolchain: the cargo steps are skipped; --wgpu also runs the
#       # limit, preallocation, a parallel search and `compare` on wgpu (Vulkan on the GPU)
#
# Building `cuda` needs cubecl-llvm's prebuilt LLVM, which its build script downloads. Without
# internet access, `../shared/scripts/llvm22-standin.sh` (see ../shared/notes/llvm.md) installs
# Debian's LLVM 22 in its place; that route is unsupported for users.
set -uo pipefail

gpu=1
bin=""
wgpu=0
out="gpu-check-$(date +%Y%m%d-%H%M%S).txt"
while [ $# -gt 0 ]; do
  case "$1" in
    --no-gpu) gpu=0 ;;
    --out) out="$(realpath -m "${2:?--out needs a file}")"; shift ;;
    --bin) bin="$(realpath "${2:?--bin needs a file}")"; shift ;;
    --wgpu) wgpu=1 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done
# Paths given are the caller's; the steps run from the repository's root.
cd "$(dirname "$0")/.."

failures=0
prebuilt=0
[ -z "$bin" ] || prebuilt=1
# Runs a step, appends its command and output to the results file, and counts failures.
# `expect` is the exit code the step should end with.
run() {
  local expect="$1"; shift
  printf '\n$ %s\n' "$*" | tee -a "$out"
  # STEP_TIMEOUT (seconds) bounds each step on a lent machine; 0, the default, is no limit.
  if declare -F "$1" >/dev/null; then
    "$@" 2>&1 | tee -a "$out"   # a step of this script's own (it bounds its own waits)
  else
    timeout --kill-after=5 "${STEP_TIMEOUT:-0}" "$@" 2>&1 | tee -a "$out"
  fi
  local code=${PIPESTATUS[0]}
  if [ "$code" -ne "$expect" ]; then
    echo "!! exit $code, expected $expect" | tee -a "$out"
    failures=$((failures + 1))
  fi
}

# A parallel search of long trials on BACKEND, killed with SIGKILL once both trials run: its
# children must be gone within 2 s (Linux's parent-death signal), and with them their memory on
# the device (nvidia-smi lists no compute process of theirs). Prints what it saw; fails if not.
orphans() {
  local backend="$1" dir="gpu-runs/$1/orphans" search pids i
  rm -rf "$dir"
  "$bin" sweep --config configs/search-parallel.toml --set device.backend="$backend" \
    --set 'sweep.budget="8GiB"' --set sweep.trials=2 --set train.epochs=500 \
    --out "$dir" >/dev/null 2>&1 &
  search=$!
  for i in $(seq 1 300); do
    pids=$(python3 -c 'import glob,json,sys; s=json.load(open(glob.glob(sys.argv[1])[0])); print(" ".join(str(v["pid"]) for v in s["slots"].values() if v["ended_unix"] is None))' \
      "$dir/search-parallel-sweep/schedule-*.json" 2>/dev/null)
    [ "$(echo "$pids" | wc -w)" -eq 2 ] && ls "$dir"/search-parallel-sweep/trial-*/checkpoints/latest >/dev/null 2>&1 && break
    sleep 0.1
  done
  echo "children: $pids"
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader 2>&1 | sed 's/^/  on the GPU before: /'
  kill -9 "$search"; wait "$search" 2>/dev/null
  sleep 2
  local left=""
  for p in $pids; do [ -d "/proc/$p" ] && ! grep -q ') Z ' "/proc/$p/stat" && left="$left $p"; done
  local after
  after=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader 2>&1)
  echo "$after" | sed 's/^/  on the GPU 2 s after: /'
  echo "children alive 2 s after the search was killed:${left:- none}"
  for p in $left; do kill -9 "$p"; done
  local held=""
  for p in $pids; do echo "$after" | grep -q "^$p," && held="$held $p"; done
  echo "children still holding device memory:${held:- none}"
  [ -z "$left" ] && [ -z "$held" ] && [ "$(echo "$pids" | wc -w)" -eq 2 ]
}

echo "tidemark GPU check, $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)" | tee "$out"

# No GPU needed: the CUDA code type-checks. DOCS_RS makes cubecl-llvm skip its LLVM download.
[ -n "$bin" ] || run 0 env DOCS_RS=1 cargo check --features cuda --all-targets

if [ "$gpu" -eq 1 ]; then
  run 0 nvidia-smi
  if [ -z "$bin" ]; then
    run 0 cargo build --release --features cuda
    bin=target/release/tidemark
  fi
  if [ "$wgpu" -eq 1 ]; then
    # wgpu through the GPU's own Vulkan driver: the same CubeCL pool manager as CUDA.
    w=(--set device.backend=wgpu)
    run 3 "$bin" train --config configs/limit-fail.toml "${w[@]}" --out gpu-runs/wgpu
    run 0 "$bin" train --config configs/limit-shrink.toml "${w[@]}" --out gpu-runs/wgpu
    run 0 "$bin" train --config configs/preallocate.toml "${w[@]}" --out gpu-runs/wgpu
    # Trials two at a time under leases sized from the device's capacity (a shorter search).
    # wgpu reports no capacity to size a default budget from (docs/search.md): give one.
    run 0 "$bin" sweep --config configs/search-parallel.toml "${w[@]}" --set 'sweep.budget="8GiB"' \
      --set sweep.trials=8 --set train.epochs=3 --out gpu-runs/wgpu
    run 0 "$bin" compare --config configs/quickstart.toml "${w[@]}" \
      --policies growth,preallocate,limit,shrink,never --out gpu-runs/wgpu
    run 0 orphans wgpu
  fi
  cuda=(--set device.backend=cuda)
  # The quickstart on CUDA: snapshots come from the device pools (source = "cubecl-pool").
  run 0 "$bin" train --config configs/quickstart.toml "${cuda[@]}" --out gpu-runs/cuda
  # A device budget read from the device (issue 68, `memory.device_budget = "device"`): the
  # run's lease line gives the driver's free memory as its budget, beside nvidia-smi's.
  run 0 nvidia-smi --query-gpu=memory.free,memory.total --format=csv
  run 0 env TIDEMARK_LEASES=gpu-runs/leases TIDEMARK_DEVICE_BUDGET=cuda-0=device "$bin" train \
    --config configs/quickstart.toml "${cuda[@]}" --set train.epochs=1 --out gpu-runs/cuda-leased
  # Kernels a W1 step launches on CUDA, by kind (issue 66, item 4: 34 on wgpu).
  run 0 scripts/kernel-count.sh --bin "$bin" --backend cuda
  # A second run's first step with the kernel cache (issue 66, item 5): autotune's choices and
  # the PTX kept, against the same run with TIDEMARK_KERNEL_CACHE=off.
  run 0 scripts/kernel-cache-check.sh --bin "$bin" --backend cuda --config configs/bench/w1.toml
  # Preallocation: run_start shows the reservation; reserved should not rise above it
  # (CUDA has no uniform/staging pools, unlike wgpu).
  run 0 "$bin" train --config configs/preallocate.toml "${cuda[@]}" --out gpu-runs/cuda
  # The limit on pool figures: fail (exit 3) and shrink.
  run 3 "$bin" train --config configs/limit-fail.toml "${cuda[@]}" --out gpu-runs/cuda
  run 0 "$bin" train --config configs/limit-shrink.toml "${cuda[@]}" --out gpu-runs/cuda
  # Clearing between runs against never, ten runs each.
  run 0 "$bin" sweep --config configs/sweep.toml --runs 10 "${cuda[@]}" --out gpu-runs/cuda/between
  run 0 "$bin" sweep --config configs/sweep.toml --runs 10 --set memory.clear=never "${cuda[@]}" --out gpu-runs/cuda/never
  run 0 orphans cuda
  # Trials two at a time under leases on CUDA's pools.
  run 0 "$bin" sweep --config configs/search-parallel.toml "${cuda[@]}" \
    --set sweep.trials=8 --set train.epochs=3 --out gpu-runs/cuda
  # The memory tests of the test suite (flex, and wgpu if an adapter exists) with cuda built in.
  [ "$prebuilt" -eq 1 ] || run 0 cargo test --release --features cuda
  for f in gpu-runs/*/*/snapshots.jsonl; do
    printf '\n# %s\n' "$f" >> "$out"
    cat "$f" >> "$out"
  done
fi

echo
echo "gpu-check: $failures step(s) failed; results in $out" | tee -a "$out"
[ "$failures" -eq 0 ]
