#!/usr/bin/env bash
# The service path against its floor: the same `f2obo-cli bench` streams
# against f2obo-server and against f2obo-echo-server (bench/service/
# echo_server.cc: same API and messages, nothing behind it), side by side,
# for three shapes: tiny steps, 8 x 784 steps and 8 sync streams.  Prints
# both lines, the ratio of steps/s (server / echo) and the server's step
# p50 over the echo's p50 plus the server's round p50 (the goals: tiny >=
# 0.7 of the echo's steps/s, 8 x 784 p50 <= 1.25 x (echo p50 + round), 8
# sync streams >= 0.5; bench/RESULTS.md has the current figures).
# First it prints what a synchronous 4 KiB write costs on the disk of the
# scratch directory: the sync row's steps wait for fdatasync, the echo's
# do not, so that row is bounded by the disk (8 streams of one step in
# flight: at most 8 steps a fdatasync).
# RUNS=N repeats the three rows N times and then prints one line a row for
# bench/RESULTS.md's table: the median and range of the N figures, how many
# runs are at the row's line, the date and the load at start and end.
# Usage: [RUNS=N] bench/service/echo_bench.sh [BUILD_DIR]   (needs the
# targets f2obo-server, f2obo-cli and f2obo-echo-server)
set -euo pipefail
build="${1:-build}"
cli="$build/client/f2obo-cli"
work="$(mktemp -d)"
pid=
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

. "$(dirname "$0")/lib.sh"

rate_of() { echo "$1" | grep -oE '[0-9.]+ steps/s' | head -1 | cut -d' ' -f1; }
p50_of() { echo "$1" | grep -oE ' p50 [0-9.]+ ms' | head -1 | awk '{ print $2 }'; }
round_of() { echo "$1" | grep -oE 'round p50 [0-9.]+ ms' | awk '{ print $3 }'; }

compare() {  # row durability streams label bench-args...
  local a b row="$1"
  shift
  server="$build/server/f2obo-server"
  a="$(run_loadgen "$@")"
  server="$build/bench/f2obo-echo-server"
  b="$(run_loadgen "$@")"
  echo "server  $a"
  echo "echo    $b"
  awk -v a="$(rate_of "$a")" -v b="$(rate_of "$b")" \
    'BEGIN { printf "        server / echo steps/s = %.2f\n", a / b }'
  # The row's figure, for the summary (RUNS > 1).
  if [ "$row" = latency ]; then
    awk -v s="$(p50_of "$a")" -v e="$(p50_of "$b")" -v r="$(round_of "$a")" \
      'BEGIN { printf "%.4f\n", s / (e + r) }' >>"$work/latency"
  else
    awk -v a="$(rate_of "$a")" -v b="$(rate_of "$b")" 'BEGIN { printf "%.4f\n", a / b }' \
      >>"$work/$row"
  fi  # The measure for steps whose round is not negligible: the step's
  # p50 against the echo's p50 plus the server's round p50.
  awk -v s="$(p50_of "$a")" -v e="$(p50_of "$b")" -v r="$(round_of "$a")" \
    'BEGIN { printf "        server p50 / (echo p50 + round p50) = %.3f / (%.3f + %.3f) = %.2f\n",
             s, e, r, s / (e + r) }'
}

tiny=(--exact_every=0 --family=ridge_hpo --features=16 --rows_per_step=8 --algorithm=f2obo)
# The sync row waits for fdatasync: say what one costs on this disk now
# (200 synchronous 4 KiB writes in the scratch directory).
sync_ms="$(dd if=/dev/zero of="$work/probe" bs=4k count=200 oflag=dsync 2>&1 |
  grep -oE '[0-9.]+ s,' | awk '{ printf "%.2f", $1 * 1000 / 200 }')"
rm -f "$work/probe"
echo "disk: a synchronous 4 KiB write takes $sync_ms ms (dd oflag=dsync)"
runs="${RUNS:-1}"
start="$(date -u '+%Y-%m-%d %H:%M')" load0="$(cut -d' ' -f1 /proc/loadavg)"
for run in $(seq 1 "$runs"); do
  [ "$runs" -gt 1 ] && echo "run $run of $runs"
  compare tiny none 1 "ridge_hpo 8x16" "${tiny[@]}" --steps=3000
  compare latency none 1 "logistic_hpo 8x784" --exact_every=0 --family=logistic_hpo \
    --features=784 --classes=10 --rows_per_step=8 --algorithm=f2obo --steps=1000
  compare sync sync 8 "ridge_hpo 8x16" "${tiny[@]}" --steps=500
done
[ "$runs" -gt 1 ] || exit 0

# One table row each: median (min-max) of the runs, runs at the line.
row() {  # file line(>=|<=) goal text
  sort -g "$work/$1" | awk -v op="$2" -v goal="$3" -v text="$4" -v when="$when" \
    -v cmd="RUNS=$runs bash bench/service/echo_bench.sh $build" '
    { v[NR] = $1; ok += (op == ">=" ? $1 >= goal : $1 <= goal) }
    END {
      m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      printf "| %s | **%.2f** (median of %d, %.2f-%.2f; %d of %d %s %s) | `%s` | vm, %s |\n",
             text, m, NR, v[1], v[NR], ok, NR, op, goal, cmd, when
    }'
}
when="$start-$(date -u '+%H:%M') (load $load0-$(cut -d' ' -f1 /proc/loadavg); a synchronous 4 KiB write $sync_ms ms)"
echo
row tiny ">=" 0.7 "tiny steps (ridge_hpo 8 x 16), \`--durability=none\`, 1 stream: server / echo steps/s"
row latency "<=" 1.25 "logistic_hpo 8 x 784, \`none\`, 1 stream: step p50 / (echo p50 + round p50)"
row sync ">=" 0.5 "8 streams \`sync\` (tiny steps): server / echo steps/s"
