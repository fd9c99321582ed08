#!/bin/bash
# Whether a study slows as it grows: one worker trains N tiny trials (64 samples; a random
# search with ASHA from epoch 1 over 3 epochs each, or with --plain one epoch each and no
# pruner) from a journal file, and the gap between one trial's creation and the next is
# compared, first tenth of the study against last. Each binary given runs ROUNDS times,
# interleaved, in a fresh directory under DIR (tmpfs by default: the filesystem's own cost of
# creating many files is not the study's).
#   scripts/study-growth.sh [--trials N] [--rounds R] [--plain] [--dir DIR] BIN [BIN...]
set -euo pipefail
trials=1000 rounds=3 dir=/dev/shm/tidemark-study-growth plain=0
while [ $# -gt 0 ]; do
  case "$1" in
    --trials) trials=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --plain) plain=1; shift ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    --*) echo "study-growth: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { echo "study-growth: give at least one tidemark binary" >&2; exit 2; }
for bin in "$@"; do
  [ -x "$bin" ] || { echo "study-growth: $bin is not an executable" >&2; exit 2; }
done
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
cat > "$dir/g.toml" <<TOML
[run]
name = "grow"
seed = 1
[model]
hidden = [8]
[data]
kind = "synthetic"
samples = 64
features = 4
classes = 2
[train]
epochs = 3
batch_size = 32
[sweep]
method = "random"
trials = $trials
seed = 1
[sweep.vary]
train.lr = { min = 1e-4, max = 1e-1, log = true }
[sweep.prune]
method = "asha"
min_epochs = 1
TOML
if [ "$plain" = 1 ]; then
  sed -i -e 's/^epochs = 3$/epochs = 1/' -e '/^\[sweep.prune\]$/,$d' "$dir/g.toml"
fi
for round in $(seq "$rounds"); do
  for bin in "$@"; do
    rm -rf "$dir/o" "$dir"/j.log*
    start=$(date +%s.%N)
    "$bin" sweep --config "$dir/g.toml" --storage "$dir/j.log" --out "$dir/o" >/dev/null 2>&1
    end=$(date +%s.%N)
    python3 - "$bin" "$round" "$start" "$end" "$dir/j.log" <<'PY'
import datetime, json, statistics, sys
bin, round_, start, end, path = sys.argv[1:]
ops = [json.loads(line) for line in open(path)]
made = sorted(datetime.datetime.fromisoformat(o["datetime_start"])
              for o in ops if o["op_code"] == 4 and o.get("datetime_start"))
gaps = [(b - a).total_seconds() * 1000 for a, b in zip(made, made[1:])]
tenth = max(1, len(gaps) // 10)
first, last = statistics.mean(gaps[:tenth]), statistics.mean(gaps[-tenth:])
print(f"{bin} round {round_}: {len(made)} trials in {float(end) - float(start):.1f} s; "
      f"a trial every {first:.1f} ms in the first tenth, {last:.1f} ms in the last (x{last / first:.2f})")
PY
  done
done
