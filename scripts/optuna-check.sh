#!/usr/bin/env bash
# Optuna 5 reads a tidemark study, from a journal file and from Redis (docs/cluster.md):
# two workers share each study of a small TPE search, then scripts/optuna-reads.py loads it
# with Optuna's own JournalStorage and compares every trial with sweep.json and the runs'
# snapshots; again for a journal whose writer was killed half-way through a record. Then the
# same for the journal.log a search in one process writes, pruned by ASHA.
#
#   scripts/optuna-check.sh [TIDEMARK_BINARY]    # default: target/release/tidemark
#
# Installs Optuna 5.0.0 and the redis package into a venv under the scratch directory; needs
# Debian's redis-server on PATH (apt-get install redis-server), which it starts on a free port
# of localhost and stops at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(realpath "${1:-target/release/tidemark}")"
scratch=$(mktemp -d)
redis_pid=""
trap '[ -z "$redis_pid" ] || kill "$redis_pid" 2>/dev/null; rm -rf "$scratch"' EXIT

python3 -m venv "$scratch/venv"
"$scratch/venv/bin/pip" install -q 'optuna==5.0.0' 'redis>=5'
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >/dev/null &
redis_pid=$!
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done

# A TPE search of 12 trials (6 drawn by TPE), small enough to take seconds.
search=(--config configs/search-tpe.toml --set sweep.trials=12 --set data.samples=4096)
for storage in "$scratch/journal.log" "redis://127.0.0.1:$port"; do
  name=$(echo "$storage" | tr -c 'a-z0-9\n' '_')
  pids=()
  for w in 1 2; do
    "$bin" sweep "${search[@]}" --storage "$storage" --out "$scratch/$name-$w" >/dev/null 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  "$scratch/venv/bin/python" scripts/optuna-reads.py "$storage" \
    "$scratch/$name-1/search-tpe-sweep" "$scratch/$name-2/search-tpe-sweep"
done
# A writer killed half-way through a record (its 6th append, src/failpoint.rs), its lock then
# broken as a waiter breaks a dead holder's after 30 s: two more workers complete the study,
# and Optuna reads every line of the journal.
killed="$scratch/killed.log"
TIDEMARK_FAILPOINT=append:6:KILL TIDEMARK_FAILPOINT_COUNT="$scratch/count" \
  "$bin" sweep "${search[@]}" --set sweep.heartbeat=0.2 --set sweep.grace=1 --storage "$killed" --out "$scratch/killed-0" \
  >/dev/null 2>&1 && { echo "optuna-check: the writer was not killed" >&2; exit 1; }
[ "$(tail -c 1 "$killed" | od -An -c | tr -d ' ')" != '\n' ] || {
  echo "optuna-check: the killed writer left no cut line" >&2; exit 1; }
rm -f "$killed.lock"
pids=()
for w in 1 2; do
  "$bin" sweep "${search[@]}" --set sweep.heartbeat=0.2 --set sweep.grace=1 --storage "$killed" --out "$scratch/killed-$w" \
    >/dev/null 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
"$scratch/venv/bin/python" scripts/optuna-reads.py "$killed" \
  "$scratch/killed-1/search-tpe-sweep" "$scratch/killed-2/search-tpe-sweep" "$scratch/killed-0/search-tpe-sweep"
"$bin" sweep --config configs/search-asha.toml --set sweep.trials=27 --set data.samples=4096 \
  --out "$scratch/plain" >/dev/null 2>&1
"$scratch/venv/bin/python" scripts/optuna-reads.py "$scratch/plain/search-asha-sweep/journal.log" \
  "$scratch/plain/search-asha-sweep"
