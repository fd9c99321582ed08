#!/usr/bin/env bash
# Kernels a training step launches on a CubeCL backend, by kind (issue 66, item 4).
#
#   scripts/kernel-count.sh [--bin PATH] [--config FILE] [--backend wgpu] [-- --set KEY=VALUE ...]
#
# Runs one epoch of the config twice, at 6 and at 16 steps, with CubeCL's profiling log at its
# lowest level (`[profiling.logger] level = "minimal"` in a `cubecl.toml` of a scratch working
# directory: one line per kernel launched). What the two runs share (building the model, the
# first step's extra work, validation's one batch, the end of the run) cancels in the
# difference, so the counts are a step's. `--bin` defaults to target/debug/tidemark, which must
# have been built with the backend's feature (`cargo build --features wgpu`). Arguments after
# `--` go to both runs (`--set train.optimizer="sgd"`, say). On a backend other than wgpu, and
# with `-- --set device.execution=fused` (a fused build), a first, uncounted run fills CubeCL's
# autotune cache (`--backend cuda` on a GPU: scripts/gpu-check.sh), a kernel cache of the
# scratch directory's (TIDEMARK_KERNEL_CACHE) that the counted runs read.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/target/debug/tidemark"
config="$root/configs/bench/w1.toml"
backend="wgpu"
extra=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --bin) bin="$(realpath "$2")"; shift 2 ;;
        --config) config="$(realpath "$2")"; shift 2 ;;
        --backend) backend="$2"; shift 2 ;;
        --) shift; extra=("$@"); break ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "kernel-count.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[[ -x "$bin" ]] || { echo "kernel-count.sh: no binary at $bin (cargo build --features $backend)" >&2; exit 2; }
[[ -f "$config" ]] || { echo "kernel-count.sh: no config at $config" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
batch="$(sed -n 's/^batch_size *= *\([0-9]*\).*/\1/p' "$config" | head -1)"
batch="${batch:-256}"

run() { # run STEPS
    local steps="$1"
    # Validation takes 1% of the samples: one batch in either run.
    local samples=$(( (steps * batch - batch / 2) * 100 / 99 ))
    cat > "$work/cubecl.toml" <<EOF
[profiling.logger]
level = "minimal"
file = "$work/kernels-$steps.log"
append = false
EOF
    (cd "$work" && TIDEMARK_KERNEL_CACHE="$work/kernels" "$bin" train --config "$config" --quiet \
        --set run.output_dir="$work/run-$steps" --set device.backend="$backend" \
        --set train.epochs=1 --set data.samples="$samples" \
        --set data.validation_fraction=0.01 "${extra[@]}" >"$work/out-$steps.txt" 2>&1) || {
        echo "kernel-count.sh: the $steps-step run failed:" >&2
        grep -v XDG_RUNTIME_DIR "$work/out-$steps.txt" >&2
        exit 1
    }
    # Which step count the run took, from its summary line.
    grep -o '[0-9]* steps' "$work/out-$steps.txt" | head -1 | cut -d' ' -f1
}

# A build that autotunes (CUDA, and any `fused` build) launches candidates the first time a
# shape is seen and keeps the winner in the kernel cache: a first run fills it, so that neither
# counted run tunes. wgpu's eager build tunes nothing, and skips it.
if [[ "$backend" != "wgpu" ]] || grep -qE 'execution *= *"?fused' <<<"${extra[*]:-}"; then
    run 2 >/dev/null
fi
short="$(run 6)"
long="$(run 16)"
python3 - "$work/kernels-6.log" "$work/kernels-16.log" "$short" "$long" <<'EOF'
import collections, re, sys

def kinds(path):
    counts = collections.Counter()
    for line in open(path):
        name = line.strip().removeprefix("Executing ")
        if not name:
            continue
        # The kernel's type, then its parameters; the last ends in a hash of the whole.
        name = re.sub(r"_[0-9a-f]{8}$", "", name)
        fields = [f.strip() for f in name.split(" | ")]
        # The type, and the operation it carries where it has one (MulOp, AddOp ...).
        kind = fields[0]
        if len(fields) > 1 and fields[1].endswith("Op"):
            kind += " " + fields[1]
        counts[kind] += 1
    return counts

a, b = kinds(sys.argv[1]), kinds(sys.argv[2])
steps = int(sys.argv[4]) - int(sys.argv[3])
rows = sorted(((b[k] - a[k]) / steps, k) for k in set(a) | set(b))
print(f"kernels a step ({sys.argv[3]}- and {sys.argv[4]}-step runs, the difference over {steps} steps)")
for per_step, kind in reversed(rows):
    if per_step:
        print(f"{per_step:8.1f}  {kind}")
print(f"{(sum(b.values()) - sum(a.values())) / steps:8.1f}  in all")
EOF
