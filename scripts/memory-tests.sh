#!/usr/bin/env bash
# The tests that read measured memory, under one of the conditions that move those figures
# between machines. On flex, a run's byte counts (gemm's packing buffers, Burn's warm-up, what a
# run holds at its start) depend on the CPU and on the number of rayon workers, so these tests
# assert only relations and limits derived from figures they measured themselves; this script
# checks that they still hold where the figures differ. CI runs it twice (and the whole
# suite under `scripts/other-cpu.sh --l2 512K cargo test`, gemm's buffers as on an AMD EPYC):
#
#   RAYON_NUM_THREADS=1 scripts/other-cpu.sh --l2 256K scripts/memory-tests.sh
#   RAYON_NUM_THREADS=3 scripts/other-cpu.sh --l2 8M scripts/memory-tests.sh
#
# Arguments go to `cargo test` (a feature set, `--release`). docs/architecture.md says how to
# reproduce a failure that depends on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
# The modules of tests/cli/ whose tests compare measured bytes, the hand loop's tests (limits
# derived from shapes and from what the run measured at its start), and the unit tests of
# src/memory/.
filters=(advisor:: breakdown:: custom:: experiments:: fit:: memory:: picture:: run_dir::
  search:: training::)
# The 500-trial flat search (its filter would match `search::`) asserts a slope, not a byte
# count; `cargo test` runs it once, and at over two minutes in a debug build it is left out here.
echo "memory tests: RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-unset}, cargo test $*"
cargo test "$@" --test cli -- "${filters[@]}" --skip flat_search::
cargo test "$@" --test hand_loop
cargo test "$@" --lib -- memory::
