#!/usr/bin/env bash
# A row of echo_bench.sh, A/B in CPU time: two f2obo-server builds run in
# turn (A B A B ...) under the same `f2obo-cli bench` (SHAPE=sync, the
# default: ridge_hpo 8 x 16, 8 sessions on 8 threads, --durability=sync;
# SHAPE=tiny: the same steps, 1 stream, --durability=none; SHAPE=784:
# logistic_hpo 8 x 784, 1 stream, none; a fresh data directory each, after
# 200 warm-up steps), and each run prints steps/s, the server process's CPU per step
# (utime + stime from /proc over the bench) and its store writer thread's
# (thread "f2obo-store"; in builds before it was named, the first unnamed
# thread after the main one).  CPU time keeps other processes' load out of
# the figures far better than steps/s on a shared machine; quote the load.
# The last lines: the medians of A's and B's server CPU per step and of the
# pairs' ratios A/B.
# Usage: [SHAPE=sync|tiny|784] bench/service/sync_cpu_ab.sh SERVER_A SERVER_B [ROUNDS] [STEPS]
#   (STEPS per stream; CLI: $build/client/f2obo-cli, build = $BUILD or "build")
set -euo pipefail
a="$1" b="$2" rounds="${3:-4}" steps="${4:-1500}"
cli="${BUILD:-build}/client/f2obo-cli"
work="$(mktemp -d)"
pid=
shape="${SHAPE:-sync}"
case "$shape" in
  sync) durability=sync streams=8 args=(--family=ridge_hpo --features=16) ;;
  tiny) durability=none streams=1 args=(--family=ridge_hpo --features=16) ;;
  784) durability=none streams=1 args=(--family=logistic_hpo --features=784 --classes=10) ;;
  *) echo "SHAPE: sync, tiny or 784" >&2; exit 2 ;;
esac
args+=(--exact_every=0 --rows_per_step=8 --algorithm=f2obo --sessions="$streams" --threads="$streams")
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
  "$2" --listen=127.0.0.1:0 --metrics_listen= --data_dir="$work/data" --durability="$durability" \
    >"$work/banner" 2>"$work/server.log" &
  pid=$!
  local line port wt p0 w0 p1 w1 out hz
  hz="$(getconf CLK_TCK)"
  read -r line <"$work/banner"
  port="$(echo "$line" | sed -E 's/.*listening on [^ ]+:([0-9]+),.*/\1/')"
  wt="$(writer_tid)"
  "$cli" bench --server="127.0.0.1:$port" "${args[@]}" --steps=200 >/dev/null 2>&1
  p0="$(ticks /proc/"$pid"/stat)" w0="$(ticks /proc/"$pid"/task/"$wt"/stat)"
  out="$("$cli" bench --server="127.0.0.1:$port" "${args[@]}" --steps="$steps" 2>&1)"
  p1="$(ticks /proc/"$pid"/stat)" w1="$(ticks /proc/"$pid"/task/"$wt"/stat)"
  kill -TERM "$pid"
  wait "$pid" || true
  awk -v l="$1" -v r="$(echo "$out" | grep -oE '[0-9.]+ steps/s' | head -1 | cut -d' ' -f1)" \
    -v p=$((p1 - p0)) -v w=$((w1 - w0)) -v n=$((streams * steps)) -v hz=$hz \
    -v load="$(cut -d' ' -f1 /proc/loadavg)" \
    'BEGIN { printf "%s  %8.0f steps/s  server CPU %4.0f us/step  writer %4.0f us/step  load %s\n",
             l, r, p * 1e6 / hz / n, w * 1e6 / hz / n, load }'
}

for _ in $(seq 1 "$rounds"); do
  one A "$a"
  one B "$b"
done | tee "$work/runs"
echo "SHAPE=$shape, $rounds rounds of $steps steps a stream:"
# Medians of the server CPU per step (field 6), and of the pairs' ratios.
awk '{ cpu[$1, ++n[$1]] = $6 }
     function median(v, k,   i, j, t) {
       for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
       return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
     }
     END {
       for (i = 1; i <= n["A"]; i++) { a[i] = cpu["A", i]; b[i] = cpu["B", i]; r[i] = cpu["A", i] / cpu["B", i] }
       printf "median server CPU per step: A %.0f us, B %.0f us; median of the pairs A/B %.2f\n",
              median(a, n["A"]), median(b, n["A"]), median(r, n["A"])
     }' "$work/runs"
