#!/usr/bin/env bash
# Runs a command as if on another CPU, for the tests whose byte counts move between machines.
#
#   scripts/other-cpu.sh --l2 512K CMD...        # every core reports an L2 cache of 512 KiB
#   scripts/other-cpu.sh --haswell BINARY ARGS...  # a test binary without AVX-512 (qemu-user)
#
# What moves a run's figures on flex, and how each option changes it for real:
# - gemm keeps one packing buffer per thread the size of the L2 cache, which it reads from
#   /sys/devices/system/cpu/cpu*/cache (512 KiB on an AMD EPYC, 2 MiB on a Xeon: a run's
#   one-time state of 1.1 MB on one is 4.2 MB on the other). --l2 bind-mounts a size over those files
#   in a mount namespace of the command's own (root, `unshare`), so gemm sizes its buffers and
#   its blocks for that cache. Every process the command starts sees the same.
# - gemm and pulp pick their kernels (AVX-512, AVX2) from CPUID at run time. --haswell runs the
#   binary under Debian's qemu-user with a Haswell CPU (AVX2, no AVX-512), about 15 times slower
#   here; processes it starts run natively, so use it on test binaries that start none (the
#   hand loop's, the unit tests).
set -euo pipefail

case "${1:-}" in
  --l2)
    size="${2:?--l2 needs a size, like 512K}"
    shift 2
    [ $# -gt 0 ] || { echo "other-cpu: --l2 SIZE needs a command" >&2; exit 2; }
    [ "$(id -u)" -eq 0 ] || { echo "other-cpu: --l2 needs root (a mount namespace)" >&2; exit 2; }
    file=$(mktemp)
    trap 'rm -f "$file"' EXIT
    echo "$size" >"$file"
    # In the namespace: each core's level-2 cache reports SIZE, then the command runs.
    unshare --mount --propagation private bash -c '
      set -e
      file="$1"; shift
      mounted=0
      for dir in /sys/devices/system/cpu/cpu[0-9]*/cache/index*; do
        if [ "$(cat "$dir/level" 2>/dev/null)" = 2 ]; then
          mount --bind "$file" "$dir/size"
          mounted=$((mounted + 1))
        fi
      done
      [ "$mounted" -gt 0 ] || { echo "other-cpu: no L2 cache in /sys to change" >&2; exit 2; }
      exec "$@"' other-cpu "$file" "$@"
    ;;
  --haswell)
    shift
    [ $# -gt 0 ] || { echo "other-cpu: --haswell needs a test binary" >&2; exit 2; }
    command -v qemu-x86_64 >/dev/null || {
      echo "other-cpu: --haswell needs qemu-user (apt-get install qemu-user)" >&2
      exit 2
    }
    # qemu warns once per CPU feature its emulator lacks (tsc-deadline, hle, ...): noise here.
    qemu-x86_64 -cpu Haswell "$@" 2> >(grep -v '^qemu-x86_64: warning: TCG' >&2)
    ;;
  -h | --help | '') sed -n '2,16p' "$0" ;;
  *)
    echo "other-cpu: unknown option $1 (try --help)" >&2
    exit 2
    ;;
esac
