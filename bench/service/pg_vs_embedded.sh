#!/usr/bin/env bash
# The shared PostgreSQL store against the embedded SQLite store, side by
# side: a throwaway PostgreSQL 15 on loopback (initdb in a temporary
# directory, fsync = on, synchronous_commit = on), and for each round one
# f2obo-server on each store (a fresh database / data directory each run),
# driven by the same `f2obo-cli bench` streams of tiny steps with
# --durability=sync, embedded and PostgreSQL alternating:
#   * 8 streams: steps/s, PostgreSQL / embedded (the goal: >= 0.5);
#   * 1 stream: step p50, PostgreSQL - embedded (the goal: <= 0.3 ms).
# Prints every run's line and each round's two figures, then their medians.
# With BEFORE_SERVER (another f2obo-server binary, e.g. a copy of the one
# before a change), each round also runs it on PostgreSQL, in turn with the
# build's, in the same cluster: the change's A/B.
# Usage: bench/service/pg_vs_embedded.sh [BUILD_DIR] [ROUNDS] [BEFORE_SERVER]
#   (needs the targets f2obo-server and f2obo-cli, and PostgreSQL's server
#   programs: scripts/deps.sh --test; F2OBO_PG_BINDIR overrides where)
set -euo pipefail
build="${1:-build}"
rounds="${2:-3}"
cli="$build/client/f2obo-cli"
server="$build/server/f2obo-server"
before="${3:-}"
. "$(dirname "$0")/pg_cluster.sh"
start_pg_cluster
psql_() { "$bindir/psql" -X -q -h 127.0.0.1 -p "$port" -U f2obo -d postgres -c "$1" >/dev/null; }

tiny=(--exact_every=0 --family=ridge_hpo --features=16 --rows_per_step=8 --algorithm=f2obo)
rate_of() { echo "$1" | grep -oE '[0-9.]+ steps/s' | head -1 | cut -d' ' -f1; }
p50_of() { echo "$1" | grep -oE ' p50 [0-9.]+ ms' | head -1 | awk '{ print $2 }'; }
run=0

run_one() {  # store (embedded, pg, pg-before) streams steps
  local store="$1" streams="$2" steps="$3" where line port_s out bin="$server"
  run=$((run + 1))
  [ "$store" = pg-before ] && bin="$before"
  if [ "$store" != embedded ]; then
    psql_ "CREATE DATABASE bench_$run"
    where=(--store="postgresql://f2obo@127.0.0.1:$port/bench_$run")
  else
    where=(--data_dir="$work/data_$run")
  fi
  rm -f "$work/banner"
  mkfifo "$work/banner"
  "$bin" --listen=127.0.0.1:0 --metrics_listen= --durability=sync "${where[@]}" \
    >"$work/banner" 2>"$work/server.log" &
  pid=$!
  read -r line <"$work/banner"
  port_s="$(echo "$line" | sed -E 's/.*listening on [^ ]+:([0-9]+),.*/\1/')"
  if ! out="$("$cli" bench --server="127.0.0.1:$port_s" --sessions="$streams" \
                 --threads="$streams" --steps="$steps" "${tiny[@]}" 2>&1)"; then
    echo "f2obo-cli bench failed ($store, $streams streams):" >&2
    echo "$out" >&2
    cat "$work/server.log" >&2
    exit 1
  fi
  kill -TERM "$pid"
  wait "$pid" || true
  pid=
  rm -rf "$work/data_$run"
  [ "$store" != embedded ] && psql_ "DROP DATABASE bench_$run"
  printf '%-8s %2s streams  %s steps/s  p50 %s ms  (%s)\n' "$store" "$streams" \
    "$(rate_of "$out")" "$(p50_of "$out")" "$(echo "$out" | grep -oE 'p50 .* p99 [0-9.]+ ms' | head -1)" >&2
  echo "$(rate_of "$out") $(p50_of "$out")"
}

ratios=()
deltas=()
bratios=()
bdeltas=()
for r in $(seq 1 "$rounds"); do
  read -r e8 _ <<<"$(run_one embedded 8 500)"
  read -r p8 _ <<<"$(run_one pg 8 500)"
  [ -n "$before" ] && read -r b8 _ <<<"$(run_one pg-before 8 500)"
  read -r _ e1 <<<"$(run_one embedded 1 2000)"
  read -r _ p1 <<<"$(run_one pg 1 2000)"
  [ -n "$before" ] && read -r _ b1 <<<"$(run_one pg-before 1 2000)"
  ratio="$(awk -v a="$p8" -v b="$e8" 'BEGIN { printf "%.2f", a / b }')"
  delta="$(awk -v a="$p1" -v b="$e1" 'BEGIN { printf "%.3f", a - b }')"
  echo "round $r: 8 sync streams PostgreSQL / embedded steps/s = $p8 / $e8 = $ratio;" \
    "1 stream p50 PostgreSQL - embedded = $p1 - $e1 = $delta ms"
  ratios+=("$ratio")
  deltas+=("$delta")
  if [ -n "$before" ]; then
    bratio="$(awk -v a="$b8" -v b="$e8" 'BEGIN { printf "%.2f", a / b }')"
    bdelta="$(awk -v a="$b1" -v b="$e1" 'BEGIN { printf "%.3f", a - b }')"
    echo "round $r, before: 8 streams $b8 steps/s ($bratio of embedded; after / before" \
      "$(awk -v a="$p8" -v b="$b8" 'BEGIN { printf "%.2f", a / b }')); 1 stream p50 $b1 ms" \
      "(embedded + $bdelta)"
    bratios+=("$bratio")
    bdeltas+=("$bdelta")
  fi
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "median of $rounds rounds: steps/s ratio $(median "${ratios[@]}") (goal >= 0.5)," \
  "p50 difference $(median "${deltas[@]}") ms (goal <= 0.3)"
if [ -n "$before" ]; then
  echo "before ($before): steps/s ratio $(median "${bratios[@]}"), p50 difference" \
    "$(median "${bdeltas[@]}") ms"
fi
