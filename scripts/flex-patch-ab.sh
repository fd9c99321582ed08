#!/usr/bin/env bash
# What an upstream change to burn-flex would give W1's step: tidemark built against burn-flex as
# released and against the same version with patches applied (docs/upstream/*.patch), tidemark
# itself the same commit (HEAD), compared in alternating pairs. docs/performance.md's "What an
# upstream change would give" and upstream drafts 3, 6 and 7 come from it. Not part of CI.
#
#   scripts/flex-patch-ab.sh [--pairs N] [--ab-pairs M] [--config FILE] PATCH...
#
# Builds HEAD's release binary and step-split example in this checkout's target/ (as released),
# and again in a scratch worktree whose Cargo.toml patches burn-flex to a copy of the registry's
# sources with PATCH... applied (`[patch.crates-io]`; a fat-LTO build, 5-8 minutes). Then runs
# `examples/step_split.rs` N times each (default 10), alternating, and prints each part's median
# and the pair-by-pair ratios (none with `--pairs 0`), then `scripts/ab.sh <patched>
# <released> M FILE` (whole processes; default 12 pairs of W1, configs/bench/w1.toml).
# FLEX_AB_TARGET=DIR keeps the patched build's target directory there for a later run (a
# scratch one is removed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=10 ab_pairs=12 config=configs/bench/w1.toml
while [ $# -gt 0 ]; do
  case $1 in
    --pairs) pairs=${2:?--pairs needs a number}; shift 2 ;;
    --ab-pairs) ab_pairs=${2:?--ab-pairs needs a number}; shift 2 ;;
    --config) config=${2:?--config needs a file}; shift 2 ;;
    *) break ;;
  esac
done
if [ $# -eq 0 ]; then
  echo "usage: scripts/flex-patch-ab.sh [--pairs N] [--ab-pairs M] [--config FILE] PATCH..." >&2
  exit 2
fi
[ -f "$config" ] || { echo "error: --config $config: no such file" >&2; exit 2; }
patches=()
for p in "$@"; do
  [ -f "$p" ] || { echo "error: $p: no such patch file" >&2; exit 2; }
  patches+=("$(realpath "$p")")
done
if ! git diff --quiet HEAD -- src Cargo.toml Cargo.lock examples; then
  echo "error: src/, examples/ or Cargo.* differ from HEAD; the patched build is of HEAD, so commit first" >&2
  exit 2
fi
version=$(awk '/^name = "burn-flex"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' Cargo.lock)
src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"burn-flex-$version" 2>/dev/null | head -1)
if [ -z "$src" ]; then
  cargo fetch --locked >/dev/null
  src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"burn-flex-$version" | head -1)
fi

work=$(mktemp -d)
target=${FLEX_AB_TARGET:-$work/target}
cleanup() {
  git worktree remove --force "$work/tree" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

cp -r "$src" "$work/burn-flex"
chmod -R u+w "$work/burn-flex"
for p in "${patches[@]}"; do
  patch -s -p1 -d "$work/burn-flex" <"$p" || { echo "error: $p does not apply to burn-flex $version" >&2; exit 1; }
done
git worktree add --detach "$work/tree" HEAD >/dev/null 2>&1
printf '\n[patch.crates-io]\nburn-flex = { path = "%s" }\n' "$work/burn-flex" >>"$work/tree/Cargo.toml"

echo "building burn-flex $version as released (target/) and patched ($target)" >&2
cargo build --release --quiet --bin tidemark --example step_split
(cd "$work/tree" && CARGO_TARGET_DIR="$target" cargo build --release --quiet --bin tidemark --example step_split)

released=target/release patched=$target/release
for p in $(seq "$pairs"); do
  for label in released patched; do
    dir=${!label}
    echo "$label $("$dir/examples/step_split" | tail -1)" >>"$work/split.txt"
  done
  echo "step split pair $p/$pairs done" >&2
done
if [ "$pairs" -gt 0 ]; then
  python3 - "$work/split.txt" <<'PY'
import re, statistics, sys
rows = {"released": {}, "patched": {}}
for line in open(sys.argv[1]):
    label = line.split()[0]
    for part in ("forward", "backward", "optimizer", "sum"):
        rows[label].setdefault(part, []).append(float(re.search(part + r" ([0-9.]+) ms", line).group(1)))
print("| W1 step split, ms (median over the processes) | released | patched | patched/released pair by pair: median (min-max) |")
print("|---|---|---|---|")
for part in ("forward", "backward", "optimizer", "sum"):
    a, b = rows["patched"][part], rows["released"][part]
    r = [x / y for x, y in zip(a, b)]
    print(f"| {part} | {statistics.median(b):.2f} | {statistics.median(a):.2f} | "
          f"{statistics.median(r):.3f} ({min(r):.3f}-{max(r):.3f}) |")
PY
  echo
fi
cp "$patched/tidemark" "$work/tidemark-patched"
cp target/release/tidemark "$work/tidemark-released"
scripts/ab.sh "$work/tidemark-patched" "$work/tidemark-released" "$ab_pairs" "$config"
