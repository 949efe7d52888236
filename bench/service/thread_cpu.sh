#!/usr/bin/env bash
# Where a server's CPU goes, thread by thread: starts SERVER (f2obo-server or
# f2obo-echo-server) on loopback with a fresh data directory, runs 200
# warm-up steps of `f2obo-cli bench`, then STEPS more (one stream per
# session) under `perf stat --per-thread`, and prints each busy thread's
# CPU time and context switches per step, and their total.  CPU time keeps
# other processes' load out of the figures far better than steps/s on a
# shared machine; run two servers in turn (A B A B) to compare them, and
# quote the load printed.
# Needs perf (Debian: linux-perf; scripts/deps.sh --bench).
# Usage: bench/service/thread_cpu.sh SERVER [SHAPE] [STEPS] [STREAMS]
#   SHAPE: tiny (ridge_hpo 8 x 16, none; the default), 784 (logistic_hpo
#   8 x 784, none) or sync (tiny steps, --durability=sync);
#   CLI: $BUILD/client/f2obo-cli (BUILD defaults to "build").
set -euo pipefail
server="$1" shape="${2:-tiny}" steps="${3:-8000}" streams="${4:-1}"
cli="${BUILD:-build}/client/f2obo-cli"
case "$shape" in
  tiny) durability=none args=(--family=ridge_hpo --features=16) ;;
  784) durability=none args=(--family=logistic_hpo --features=784 --classes=10) ;;
  sync) durability=sync args=(--family=ridge_hpo --features=16) ;;
  *) echo "SHAPE: tiny, 784 or sync" >&2; exit 2 ;;
esac
args+=(--exact_every=0 --rows_per_step=8 --algorithm=f2obo --sessions="$streams"
       --threads="$streams")
work="$(mktemp -d)"
pid= perf_pid=
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
mkfifo "$work/banner"
"$server" --listen=127.0.0.1:0 --metrics_listen= --data_dir="$work/data" \
  --durability="$durability" >"$work/banner" 2>"$work/server.log" &
pid=$!
read -r line <"$work/banner"
port="$(echo "$line" | sed -E 's/.*listening on [^ ]+:([0-9]+),.*/\1/')"
"$cli" bench --server="127.0.0.1:$port" "${args[@]}" --steps=200 >/dev/null 2>&1
perf stat --per-thread -e task-clock,context-switches -p "$pid" -o "$work/perf" &
perf_pid=$!
sleep 0.3  # perf attached
out="$("$cli" bench --server="127.0.0.1:$port" "${args[@]}" --steps="$steps" 2>&1)"
kill -INT "$perf_pid"
wait "$perf_pid" || true
echo "$(basename "$server") $shape: $(echo "$out" | grep -oE '[0-9.]+ steps/s' | head -1)," \
  "load $(cut -d' ' -f1 /proc/loadavg)"
# Threads with at least 0.5 us or 0.05 switches a step; names as the
# kernel has them (f2obo-store: the store's writer; grpcpp_sync_ser: gRPC's).
awk -v n=$((streams * steps)) '
  /task-clock/ { cpu[$1] += $2 }  # milliseconds
  /context-switches/ { cs[$1] += $2 }
  END {
    for (t in cpu) {
      total += cpu[t]; switches += cs[t]
      if (cpu[t] * 1000 / n >= 0.5 || cs[t] / n >= 0.05)
        printf "  %-28s %7.1f us/step %5.2f switches/step\n", t, cpu[t] * 1000 / n, cs[t] / n
    }
    printf "  %-28s %7.1f us/step %5.2f switches/step\n", "all threads", total * 1000 / n, switches / n
  }' "$work/perf" | sort -k2 -nr
