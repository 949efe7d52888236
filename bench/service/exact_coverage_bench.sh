#!/usr/bin/env bash
# How many steps of a loaded server get exact metrics.
# Three `f2obo-cli stream` sessions at once against one f2obo-server (three
# streams on 2 cores): logistic_hpo on Fashion-MNIST (784
# features, 10 classes: y has 7,850 entries, one exact evaluation costs
# about 14 rounds), exact metrics due on every step.  After the streams the
# script waits for the metrics queue to drain, then prints per session the
# steps, the steps with exact metrics, and -- from a server that has them --
# the skipped ones, BLReg over the evaluated steps and the Horvitz-Thompson
# estimate of BLReg over every step with its standard error.  With
# REFERENCE=1 it also runs one stream of the same data alone, every step
# evaluated (no backlog), whose BLReg is the true sum the estimates
# estimate (the three loaded streams carry the same data and seeds, so the
# same trajectory).
# Usage: [REFERENCE=1|only] bench/service/exact_coverage_bench.sh [BUILD_DIR] [STEPS]
set -euo pipefail
build="${1:-build}"
steps="${2:-300}"
tail=128  # twice --max_pending_metrics (64): the jobs queued when streams end
server="$build/server/f2obo-server"
cli="$build/client/f2obo-cli"
work="$(mktemp -d)"
pid=
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
common=(--family=logistic_hpo --exact_every=1 --rows_per_step=256)
server_flags=()

start_server() {
  mkfifo "$work/banner"
  "$server" --listen=127.0.0.1:0 --metrics_listen=127.0.0.1:0 --data_dir= \
    "${server_flags[@]}" >"$work/banner" 2>"$work/server.log" &
  pid=$!
  local line
  read -r line <"$work/banner"
  port="$(echo "$line" | sed -E 's/.*listening on [^ ]+:([0-9]+),.*/\1/')"
  mport="$(echo "$line" | sed -E 's/.*metrics on [^ ]+:([0-9]+)\/metrics.*/\1/')"
}

stop_server() {
  kill -TERM "$pid"
  wait "$pid" || true
  rm -f "$work/banner"
}

# Waits until no metric job is queued (every published step counted).
drain() {
  for _ in $(seq 1 3000); do
    if curl -s "http://127.0.0.1:$mport/metrics" | grep -qE '^f2obo_metrics_jobs_queued 0$'; then
      return 0
    fi
    sleep 0.2
  done
  echo "metrics queue did not drain" >&2
  return 1
}

report() {  # label
  local ids
  ids="$(curl -s "http://127.0.0.1:$mport/api/sessions" | /usr/bin/python3 -c '
import json, sys
print(" ".join(s["id"] for s in json.load(sys.stdin)["sessions"]))')"
  for id in $ids; do
    curl -s "http://127.0.0.1:$mport/api/sessions" >"$work/sessions.json"
    curl -s "http://127.0.0.1:$mport/api/metrics?session=$id" >"$work/steps.json"
    /usr/bin/python3 - "$1" "$id" "$work/sessions.json" "$work/steps.json" "$tail" <<'PY'
import json, sys
label, sid, sessions, steps, tail = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
s = [x for x in json.load(open(sessions))["sessions"] if x["id"] == sid][0]
st = json.load(open(steps))["steps"]
n = s["next_t"] - 1
ev = s["evaluated_steps"]
# The last `tail` steps were still queued when the streams ended: drained
# with the worker no longer behind, they are evaluated more than under load.
steady = [x for x in st if x["t"] <= n - tail]
sev = sum(1 for x in steady if "blreg" in x)
line = "%-9s %-6s steps %4d  exact on %4d (%5.1f%%); under load (t <= %d): %4d of %4d (%5.1f%%)" % (
    label, sid, n, ev, 100.0 * ev / max(n, 1), n - tail, sev, len(steady),
    100.0 * sev / max(len(steady), 1))
if "skipped_steps" in s:
    line += "  BLReg(evaluated) %.4g  estimate %.4g +- %.3g" % (
        s["blreg"], s["estimate"], s["estimate_standard_error"])
else:
    line += "  BLReg(evaluated) %.4g" % s["blreg"]
print(line)
PY
  done
}

if [[ "${REFERENCE:-0}" != only ]]; then
start_server
t0=$(date +%s.%N)
streams=()
for i in 1 2 3; do
  "$cli" stream --server="127.0.0.1:$port" --create --id="load$i" "${common[@]}" \
    --steps="$steps" >"$work/stream$i.log" 2>&1 &
  streams+=($!)
done
for s in "${streams[@]}"; do
  wait "$s" || { echo "a stream failed:" >&2; cat "$work"/stream*.log >&2; exit 1; }
done
t1=$(date +%s.%N)
drain
report "3 streams"
echo "streaming: $(/usr/bin/python3 -c "print(round(3 * $steps / ($t1 - $t0), 1))") steps/s over the 3 streams"
stop_server
fi

if [[ "${REFERENCE:-0}" != 0 ]]; then
  # A queue bound beyond the steps: nothing is skipped, every step waits
  # its turn (the batches of every queued step are held meanwhile).
  server_flags=(--max_pending_metrics=100000)
  start_server
  "$cli" stream --server="127.0.0.1:$port" --create --id="alone" "${common[@]}" \
    --steps="$steps" >"$work/alone.log" 2>&1
  drain
  report "alone"
  stop_server
fi
