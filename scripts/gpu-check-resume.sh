#!/usr/bin/env bash
# The fourth H200 run's steps (docs/gpu-results.md, 2026-11-26, fourth run), on a lent GPU
# machine with no Rust toolchain: compare's shrink row on wgpu and CUDA, and a parallel ASHA
# search killed with SIGKILL at the third recorded end of a trial (the test hook
# TIDEMARK_FAILPOINT, src/failpoint.rs), then resumed. It expects what the device tool carried:
# Debian's Vulkan loader packages in .gl/ and the gzipped `--features wgpu,cuda` release binary
# in .gpubin/tidemark.gz; it writes $OUT/gpu-check-4.txt.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
gunzip -c .gpubin/tidemark.gz > /tmp/tidemark && chmod +x /tmp/tidemark
nv=$(find /usr/local/cuda*/targets -name 'libnvrtc.so.13' | head -1)
export XDG_RUNTIME_DIR=/tmp LD_LIBRARY_PATH=/usr/local/nvidia/lib64:$(dirname "$nv")
T=/tmp/tidemark
log=$OUT/gpu-check-4.txt
say() { printf '\n$ %s\n' "$*" | tee -a $log; }
for b in wgpu cuda; do
  say "$T compare --config configs/quickstart.toml --set device.backend=$b --policies shrink --out g/$b"
  timeout 120 $T compare --config configs/quickstart.toml --set device.backend=$b --policies shrink --out g/$b 2>&1 | tail -3 >> $log
  say "$T compare --config configs/limit-shrink.toml --set device.backend=$b --policies shrink --out g/$b"
  timeout 120 $T compare --config configs/limit-shrink.toml --set device.backend=$b --policies shrink --out g/$b 2>&1 | tail -3 >> $log
done
for b in wgpu cuda; do
  cfg=configs/search-parallel.toml
  say "TIDEMARK_FAILPOINT=ended:3:KILL $T sweep --config $cfg --set device.backend=$b --set sweep.budget=\"8GiB\" --set sweep.trials=6 --set train.epochs=3 --out k/$b; then sweep --resume"
  TIDEMARK_FAILPOINT=ended:3:KILL TIDEMARK_FAILPOINT_COUNT=/tmp/count-$b timeout 150 $T sweep --config $cfg --set device.backend=$b --set 'sweep.budget="8GiB"' --set 'sweep.prune.method="asha"' --set sweep.trials=6 --set train.epochs=3 --out k/$b > /tmp/k-$b.txt 2>&1
  echo "exit $? (137 = SIGKILL)" >> $log
  sleep 2
  echo "trial processes left: $(grep -l "TIDEMARK_SEARCH_PID" /proc/[0-9]*/environ 2>/dev/null | wc -l)" >> $log
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader >> $log
  timeout 150 $T sweep --resume k/$b/search-parallel-sweep 2>&1 | tail -14 >> $log
  echo "resume exit ${PIPESTATUS[0]}" >> $log
done
