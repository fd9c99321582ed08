#!/usr/bin/env bash
# Where a training step's CPU time goes on flex: `perf` samples a run of a workload and the
# samples are split by what their symbol is (GEMM's kernel, its packing, element-wise work, the
# optimizer's loop, copies and fills, allocation, the kernel's page faults and zeroed pages,
# autodiff and dispatch, data). docs/performance.md keeps the tables. Not part of CI.
#
#   scripts/profile-step.sh [CONFIG=configs/bench/w1.toml] [EPOCHS=6] [BIN=target/release/tidemark]
#   scripts/other-cpu.sh --l2 2M scripts/profile-step.sh    # gemm's blocks sized for another L2
#
# The run trains EPOCHS epochs so that the steps outweigh the set-up (data generation is its own
# row: it is set-up, not a step). The whole process is sampled (perf's cpu-clock, which needs no
# hardware counters), so the shares are of the process; the "steps" line says how many steps it
# ran and their median time, from the run's snapshots.
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-configs/bench/w1.toml}
epochs=${2:-6}
bin=${3:-target/release/tidemark}
command -v perf >/dev/null || { echo "error: perf is not installed (Debian: linux-perf)" >&2; exit 2; }
[ -x "$bin" ] || { echo "error: $bin is not an executable (cargo build --release)" >&2; exit 2; }
[ -f "$config" ] || { echo "error: $config: no such config" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

perf record -q -e cpu-clock -F 1999 -o "$out/perf.data" -- \
  "$bin" train --config "$config" --out "$out" --quiet --set "train.epochs=$epochs" \
  --set run.name=profiled >/dev/null
perf report -i "$out/perf.data" --no-children --sort dso,sym -g none --stdio 2>/dev/null \
  >"$out/report.txt"
python3 - "$out/report.txt" "$out/profiled/snapshots.jsonl" "$config" <<'PY'
import json, re, sys

report, snapshots, config = sys.argv[1:4]
# First match wins: the order puts the specific before the general.
KINDS = [
    ("GEMM kernel", r"gemm_f\d+::microkernel|gemm_common::microkernel"),
    ("GEMM packing and driver", r"^gemm|gemm_common|gemm_f\d+"),
    ("optimizer loop (fused Adam)", r"tidemark::train::optimizer|pulp::"),
    ("element-wise (flex ops)", r"burn_flex::ops|burn_flex::simd|macerator|burn_flex::"),
    ("copies and fills", r"__memmove|__memcpy|__memset|memcpy|memset"),
    ("allocation", r"malloc|_int_free|cfree|unlink_chunk|CountingAllocator|__rust_alloc|"
                   r"__rust_dealloc|__rust_realloc|_int_realloc|sysmalloc"),
    ("zeroed fresh pages and faults", r"^\[k\] (clear_page|clear_huge|do_anonymous_page|"
                                      r"handle_mm_fault|__handle_mm_fault|do_user_addr_fault|"
                                      r"exc_page_fault|asm_exc_page_fault|alloc_pages|"
                                      r"__alloc_pages|get_page_from_freelist|zap_|"
                                      r"release_pages|free_unref|__folio|folio_)"),
    ("other kernel: scheduling, wake-ups, file writes", r"^\[k\]"),
    ("autodiff, dispatch, bookkeeping", r"burn_autodiff|burn_dispatch|burn_backend|burn_tensor|"
                                        r"burn_core|burn_optim|burn_nn|hashbrown|smallvec|"
                                        r"core::hash|cubecl_zspace|spin::|std::sync"),
    ("data: generation and batches", r"__cos|__sin|__ieee754|__log|__exp|rand_|chacha|"
                                     r"burn_dataset|tidemark::data"),
    ("tidemark's loop", r"tidemark::"),
]
rows = {name: 0.0 for name, _ in KINDS}
rows["other"] = 0.0
top = {name: [] for name in rows}
line = re.compile(r"^\s*([\d.]+)%\s+(\S+)\s+(\[[.k]\])\s+(.*)$")
for text in open(report):
    m = line.match(text)
    if not m:
        continue
    share, dso, kind, sym = float(m[1]), m[2], m[3], m[4].strip()
    key = f"{kind} {sym}" if kind == "[k]" else sym
    if dso.startswith("[JIT]"):
        key = sym
    name = next((n for n, p in KINDS if re.search(p, key)), "other")
    rows[name] += share
    top[name].append((share, sym))
steps = []
for l in open(snapshots):
    s = json.loads(l)
    if s.get("event") == "epoch" and s.get("pace"):
        steps.append(s["pace"]["median_step_ms"])
ran = sum(1 for l in open(snapshots) if '"event":"epoch"' in l)
print(f"{config}: {ran} epochs; median step by epoch (ms): "
      + ", ".join(f"{x:.2f}" for x in steps))
print("| share | what | its largest symbols |")
print("| ---: | --- | --- |")
for name, share in sorted(rows.items(), key=lambda kv: -kv[1]):
    if share < 0.05:
        continue
    biggest = sorted(top[name], reverse=True)[:3]
    names = ", ".join(f"`{s[:60]}` {p:.1f}%" for p, s in biggest)
    print(f"| {share:.1f}% | {name} | {names} |")
PY
