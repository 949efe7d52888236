#!/usr/bin/env bash
# The 8-stream `sync` row of echo_bench.sh, A/B in CPU time: two f2obo-server builds
# run in turn (A B A B ...) under the same `f2obo-cli bench` (ridge_hpo
# 8 x 16, 8 sessions on 8 threads, --durability=sync, fresh data directory
# each), and each run prints steps/s, the server process's CPU per step
# (utime + stime from /proc over the bench) and its store writer thread's
# (thread "f2obo-store"; in builds before it was named, the first unnamed
# thread after the main one).  CPU time keeps other processes' load out of
# the figures far better than steps/s on a shared machine; quote the load.
# Usage: bench/service/sync_cpu_ab.sh SERVER_A SERVER_B [ROUNDS] [STEPS]
#   (CLI: $build/client/f2obo-cli, build = $BUILD or "build")
set -euo pipefail
a="$1" b="$2" rounds="${3:-4}" steps="${4:-1500}"
cli="${BUILD:-build}/client/f2obo-cli"
work="$(mktemp -d)"
pid=
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

ticks() { awk '{ print $14 + $15 }' "$1"; }  # utime + stime, in clock ticks
writer_tid() {
  local t first=
  for t in /proc/"$pid"/task/*; do
    [ "$(cat "$t/comm")" = f2obo-store ] && { basename "$t"; return; }
  done
  for t in $(ls /proc/"$pid"/task | sort -n); do
    [ "$t" != "$pid" ] && [ "$(cat /proc/"$pid"/task/"$t"/comm)" = f2obo-server ] && {
      echo "$t"
      return
    }
  done
}

one() {  # label server
  rm -rf "$work/data" "$work/banner"
  mkfifo "$work/banner"
  "$2" --listen=127.0.0.1:0 --metrics_listen= --data_dir="$work/data" --durability=sync \
    >"$work/banner" 2>"$work/server.log" &
  pid=$!
  local line port wt p0 w0 p1 w1 out hz
  hz="$(getconf CLK_TCK)"
  read -r line <"$work/banner"
  port="$(echo "$line" | sed -E 's/.*listening on [^ ]+:([0-9]+),.*/\1/')"
  wt="$(writer_tid)"
  p0="$(ticks /proc/"$pid"/stat)" w0="$(ticks /proc/"$pid"/task/"$wt"/stat)"
  out="$("$cli" bench --server="127.0.0.1:$port" --sessions=8 --threads=8 --exact_every=0 \
    --family=ridge_hpo --features=16 --rows_per_step=8 --algorithm=f2obo --steps="$steps" 2>&1)"
  p1="$(ticks /proc/"$pid"/stat)" w1="$(ticks /proc/"$pid"/task/"$wt"/stat)"
  kill -TERM "$pid"
  wait "$pid" || true
  awk -v l="$1" -v r="$(echo "$out" | grep -oE '[0-9.]+ steps/s' | head -1 | cut -d' ' -f1)" \
    -v p=$((p1 - p0)) -v w=$((w1 - w0)) -v n=$((8 * steps)) -v hz=$hz \
    -v load="$(cut -d' ' -f1 /proc/loadavg)" \
    'BEGIN { printf "%s  %8.0f steps/s  server CPU %4.0f us/step  writer %4.0f us/step  load %s\n",
             l, r, p * 1e6 / hz / n, w * 1e6 / hz / n, load }'
}

for _ in $(seq 1 "$rounds"); do
  one A "$a"
  one B "$b"
done
