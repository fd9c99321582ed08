#!/usr/bin/env bash
# What a second run saves from the caches of compiled kernels (issue 66, item 5): one config
# trained three times on a CubeCL backend, each run a fresh process, and a Markdown table of
# each run's first step, its first epoch (seconds from the run's start to that epoch's end) and
# its whole process:
#
#   1. first:  an empty kernel cache (TIDEMARK_KERNEL_CACHE) and an empty driver cache
#              (Mesa's, MESA_SHADER_CACHE_DIR), as on a new machine;
#   2. second: both as the first run left them;
#   3. no kernel cache: TIDEMARK_KERNEL_CACHE=off, the driver's cache kept (what tidemark's
#              cache adds over the driver's is the difference of 2 and 3).
#
#   scripts/kernel-cache-check.sh [--bin PATH] [--config FILE] [--backend wgpu] [-- --set K=V ...]
#
# Both caches live in a scratch directory, so the user's own are neither used nor changed. A
# build without the `kernel-cache` feature (wgpu's eager build) keeps nothing of its own: its
# second run differs from the third only by noise. The default config is configs/pool.toml,
# the wgpu tests' MLP (one epoch of 8 steps); `-- --set device.execution=fused` with a fused
# build measures fused mode, whose first epoch autotunes.
set -euo pipefail
bin="$(dirname "$0")/../target/debug/tidemark"
config=""
backend=wgpu
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$(realpath "$2"); shift 2 ;;
    --config) config=$(realpath "$2"); shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "error: unknown argument $1 (see the script's header)" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "error: $bin is not an executable (cargo build --features $backend)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -n "$config" ] || config=$(realpath "$(dirname "$0")/../configs/pool.toml")
mkdir -p "$work/xdg"
chmod 700 "$work/xdg"

run() { # NAME KERNEL_CACHE; prints the run's table row
  local name=$1 cache=$2 start end
  start=$(date +%s.%N)
  XDG_RUNTIME_DIR="$work/xdg" MESA_SHADER_CACHE_DIR="$work/mesa" TIDEMARK_KERNEL_CACHE="$cache" \
    "$bin" train --config "$config" --out "$work/runs" --quiet --set "run.name=$name" \
    --set device.backend="$backend" "${extra[@]}" </dev/null >"$work/$name.out" 2>&1 || {
    echo "error: the $name run failed:" >&2
    tail -5 "$work/$name.out" >&2
    exit 1
  }
  end=$(date +%s.%N)
  python3 - "$work/runs/$name/snapshots.jsonl" "$name" "$start" "$end" <<'PY'
import json, sys
path, name, start, end = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
epoch = next(e for e in map(json.loads, open(path)) if e.get("event") == "epoch")
print(f"| {name} | {epoch['pace']['first_step_ms']:,.0f} | {epoch['elapsed_s']:,.1f} "
      f"| {end - start:,.1f} |")
PY
}

echo "| run | first step (ms) | first epoch done (s) | process (s) |"
echo "|---|---:|---:|---:|"
run first "$work/kernels"
run second "$work/kernels"
run no-kernel-cache off
