#!/usr/bin/env bash
# Kill-and-resume check: trains CONFIG once uninterrupted, once killed with SIGKILL when its
# latest checkpoint reaches step STEP (checkpoints every EVERY steps), resumes that run, and
# prints the largest difference between the two runs' final weights.
#
#   scripts/kill-resume.sh configs/quickstart.toml 100 [EVERY=10] [--set KEY=VALUE ...]
#
# Needs the release binary and example: cargo build --release --examples
set -euo pipefail
config=$1 step=$2 every=${3:-10}
shift 2; [ $# -gt 0 ] && shift
bin=${TIDEMARK_BIN:-target/release/tidemark}
diff=${TIDEMARK_DIFF:-target/release/examples/weights_diff}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
sets=(--set "checkpoint.every_steps=$every" "$@")

"$bin" train --config "$config" --out "$out" --quiet --set run.name=reference "${sets[@]}" >/dev/null

"$bin" train --config "$config" --out "$out" --quiet --set run.name=killed "${sets[@]}" >/dev/null 2>&1 &
pid=$!
at() { # the step of checkpoints/latest (epoch-N counts as reached)
  local name; name=$(cat "$out/killed/checkpoints/latest" 2>/dev/null || true)
  case $name in step-*) echo "${name#step-}";; epoch-0|"") echo 0;; epoch-*) echo 999999999;; esac
}
while kill -0 "$pid" 2>/dev/null && [ "$(at)" -lt "$step" ]; do sleep 0.01; done
if ! kill -9 "$pid" 2>/dev/null; then echo "the run ended before step $step" >&2; exit 1; fi
wait "$pid" 2>/dev/null || true
echo "killed at checkpoint $(cat "$out/killed/checkpoints/latest")"

"$bin" train --resume "$out/killed" --quiet >/dev/null
"$diff" "$out/reference" "$out/killed" | tail -1
