#!/usr/bin/env bash
# The GPU side by side: tidemark (eager and fused, f32 and bf16) against PyTorch (eager,
# torch.compile, autocast bf16) and JAX (jit) on the same device, one process a row, in one run.
# Workloads: w1 (MLP 784-1024-1024-10, batch 256), mlp4k (784-4096-4096-4096-10, batch 2048,
# compute-bound) and cnn (the digits CNN, batch 32). docs/performance.md has the tables.
#
#   scripts/gpu-peers.sh [--backend cuda|wgpu|flex] [--bin FILE] [--fused-bin FILE]
#                        [--steps N] [--workloads w1,mlp4k,cnn] [--python PY | --no-peers]
#                        [--out DIR]
#
#   --backend    tidemark's device (default: cuda where nvidia-smi answers, else flex); the
#                peers run on CUDA with cuda, on the CPU otherwise
#   --bin        tidemark built without `fused` (default: target/release/tidemark)
#   --fused-bin  tidemark built with `fused` (its eager binary's fused rows are left out
#                without one; flex has a single mode and takes none)
#   --steps      timed steps a row (default 50): tidemark's epochs have this many (the
#                synthetic data is sized so; the CNN's digits give 45 whatever N), the peers
#                warm up this many after their first step and time the next N
#   --python     the Python holding torch and jax (default: python3); --no-peers: none
#   --out        where rows.jsonl, table.md and the runs go (default: gpu-peers-DATE)
#   --fused-only only the fused rows (with --fused-bin): a fused run's first epoch autotunes
#                its kernels, 40 s to over 2 minutes a row on an H200, so the runbook gives
#                them a call of their own (docs/gpu-results.md)
#
# Each row's figures: the median synchronised step (tidemark with run.log_every_steps = 1,
# which reads every step's loss; the peers read theirs), the first step (compiling), the
# device memory at peak, and, on CUDA, what nvidia-smi says the process holds once its run is
# released (tidemark stops itself there with TIDEMARK_FAILPOINT=summary:1:STOP until this
# script has read it). tidemark's rows also give its waits for the device and its pool
# readings per step (snapshots' `pace`). ROW_TIMEOUT (seconds, default 300) bounds each row.
set -uo pipefail

backend=""
bin=""
fused=""
steps=50
workloads="w1,mlp4k,cnn"
python=python3
fused_only=0
out="gpu-peers-$(date +%Y%m%d-%H%M%S)"
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend="${2:?--backend needs cuda, wgpu or flex}"; shift ;;
    --bin) bin="$(realpath "${2:?--bin needs a file}")"; shift ;;
    --fused-bin) fused="$(realpath "${2:?--fused-bin needs a file}")"; shift ;;
    --steps) steps="${2:?--steps needs a number}"; shift ;;
    --workloads) workloads="${2:?--workloads needs a list}"; shift ;;
    --python) python="${2:?--python needs a program}"; shift ;;
    --no-peers) python="" ;;
    --fused-only) fused_only=1 ;;
    --out) out="$(realpath -m "${2:?--out needs a folder}")"; shift ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "gpu-peers: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$steps" in ''|*[!0-9]*|0) echo "gpu-peers: --steps $steps: give a whole number above 0" >&2; exit 2 ;; esac
[ "$fused_only" -eq 0 ] || [ -n "$fused" ] || { echo "gpu-peers: --fused-only needs --fused-bin" >&2; exit 2; }
out="$(realpath -m "$out")"
cd "$(dirname "$0")/.."
script_dir="$PWD/scripts"
if [ -z "$backend" ]; then
  if nvidia-smi -L >/dev/null 2>&1; then backend=cuda; else backend=flex; fi
fi
case "$backend" in cuda|wgpu|flex) ;; *) echo "gpu-peers: --backend $backend: cuda, wgpu or flex" >&2; exit 2 ;; esac
if [ -z "$bin" ] && [ "$fused_only" -eq 0 ]; then
  features=""
  [ "$backend" = flex ] || features="--features $backend"
  # shellcheck disable=SC2086
  cargo build --release -q $features || exit 1
  bin="$PWD/target/release/tidemark"
fi
[ "$fused_only" -eq 1 ] || [ -x "$bin" ] || { echo "gpu-peers: --bin $bin: no such program" >&2; exit 2; }
peer_device=cpu
[ "$backend" = cuda ] && peer_device=cuda
row_timeout=${ROW_TIMEOUT:-300}
mkdir -p "$out/runs"
rows="$out/rows.jsonl"
: >"$rows"
failures=0
export XLA_PYTHON_CLIENT_PREALLOCATE=false TF_CPP_MIN_LOG_LEVEL=2

# What nvidia-smi says process PID holds, in bytes; empty where it cannot say.
nvml_of() {
  command -v nvidia-smi >/dev/null || return 0
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null \
    | awk -F', *' -v pid="$1" '$1 == pid { held = $2 * 1048576 } END { print held + 0 }'
}

# One tidemark row: WORKLOAD MODE PRECISION BINARY.
tidemark_row() {
  local workload="$1" mode="$2" precision="$3" binary="$4"
  local name="$workload-$mode-$precision" config sets=()
  case "$workload" in
    w1) config=configs/bench/w1.toml
        sets=(--set "data.samples=$(( steps * 256 * 5 / 4 ))") ;;
    mlp4k) config=configs/bench/w1.toml
        sets=(--set 'model.hidden=[4096, 4096, 4096]' --set train.batch_size=2048
              --set "data.samples=$(( steps * 2048 * 5 / 4 ))") ;;
    cnn) config=configs/digits-cnn.toml ;;
    *) echo "gpu-peers: unknown workload $workload (w1, mlp4k or cnn)" >&2; return 2 ;;
  esac
  local failpoint=() count="$out/runs/$name.count"
  rm -rf "${out:?}/runs/$name" "$count"
  [ "$backend" = cuda ] && failpoint=(env TIDEMARK_FAILPOINT=summary:1:STOP "TIDEMARK_FAILPOINT_COUNT=$count")
  "${failpoint[@]}" "$binary" train --config "$config" "${sets[@]}" --set "device.backend=$backend" \
    --set "device.execution=$mode" --set "train.precision=$precision" --set run.log_every_steps=1 \
    --set train.epochs=2 --set "run.name=$name" --set memory.clear=between_runs \
    --out "$out/runs" --quiet >"$out/runs/$name.log" 2>&1 &
  local pid=$! waited=0 nvml="" state
  # Stopped at `summary` (its run released), or ended: read the driver's figure, go on.
  while kill -0 "$pid" 2>/dev/null; do
    state=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null)
    if [ "$state" = T ]; then nvml=$(nvml_of "$pid"); kill -CONT "$pid"; break; fi
    sleep 0.05
    waited=$((waited + 1))
    if [ "$waited" -gt $((row_timeout * 20)) ]; then kill -9 "$pid"; echo "!! $name: over ${row_timeout} s, killed" >&2; break; fi
  done
  wait "$pid"
  local code=$?
  # A precision the device lacks (bf16 on lavapipe) is refused before the run: not a failure.
  local refused=""
  if [ "$code" -eq 2 ] && grep -q 'is not supported by the' "$out/runs/$name.log"; then
    refused=$(grep -o 'train.precision = .*' "$out/runs/$name.log" | head -1); code=0
  fi
  python3 - "$out/runs/$name" "$workload" "$mode" "$precision" "$code" "$nvml" "$backend" "$refused" >>"$rows" <<'PY'
import json, sys
run, workload, mode, precision, code, nvml, backend, refused = sys.argv[1:]
row = {"workload": workload, "impl": f"tidemark-{mode}", "precision": precision, "device": backend}
try:
    lines = [json.loads(l) for l in open(f"{run}/snapshots.jsonl")]
except OSError:
    lines = []
epochs = [s for s in lines if s["event"] == "epoch"]
end = [s for s in lines if s["event"] == "run_end"]
if refused:
    row["skipped"] = refused
elif code != "0" or len(epochs) < 2:
    row["error"] = f"exit {code}, {len(epochs)} epochs: see {run}.log"
else:
    first, second = epochs[0]["pace"], epochs[-1]["pace"]
    row.update({
        "steps": epochs[-1]["step"] - epochs[0]["step"],
        "first_step_ms": first["first_step_ms"],
        "median_step_ms": second["median_step_ms"],
        "syncs_per_step": second["syncs_per_step"],
        "memory_reads_per_step": second["memory_reads_per_step"],
        "peak_in_use": max(s["peak_bytes_in_use"] for s in epochs),
        "peak_reserved": max(s["bytes_reserved"] for s in epochs),
    })
    if backend == "flex":
        row["peak_rss"] = max(s["rss_bytes"] or 0 for s in lines)
    if end:
        row["reserved_after_release"] = end[-1]["bytes_reserved"]
    if nvml:
        row["nvml_after_release"] = int(nvml)
print(json.dumps(row))
PY
  if [ "$code" -ne 0 ]; then failures=$((failures + 1)); tail -3 "$out/runs/$name.log" >&2; fi
  echo "gpu-peers: $name done (exit $code)" >&2
}

# One peer row: WORKLOAD IMPL.
peer_row() {
  local line
  if line=$(timeout --kill-after=5 "$row_timeout" "$python" "$script_dir/peers/gpu.py" "$1" "$2" \
      --steps "$steps" --device "$peer_device" 2>"$out/runs/$1-$2.err"); then
    echo "$line" | tail -1 >>"$rows"
  else
    failures=$((failures + 1))
    tail -3 "$out/runs/$1-$2.err" >&2
    printf '{"workload": "%s", "impl": "%s", "device": "%s", "error": "see runs/%s-%s.err"}\n' \
      "$1" "$2" "$peer_device" "$1" "$2" >>"$rows"
  fi
  echo "gpu-peers: $1 $2 done" >&2
}

echo "gpu-peers: $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), backend $backend, $steps steps" | tee "$out/header.txt" >&2
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >>"$out/header.txt" 2>&1
for workload in ${workloads//,/ }; do
  for precision in f32 bf16; do
    [ "$fused_only" -eq 1 ] || tidemark_row "$workload" eager "$precision" "$bin"
    [ -z "$fused" ] || tidemark_row "$workload" fused "$precision" "$fused"
  done
  if [ -n "$python" ] && [ "$fused_only" -eq 0 ]; then
    for impl in torch-eager torch-compile torch-bf16 jax-jit; do peer_row "$workload" "$impl"; done
  fi
done

python3 "$script_dir/peers/table.py" "$rows" "$out/header.txt" | tee "$out/table.md"
echo "gpu-peers: $failures row(s) failed; rows in $rows" >&2
[ "$failures" -eq 0 ]
