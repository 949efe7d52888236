#!/usr/bin/env bash
# The service path against its floor: the same `f2obo-cli bench` streams
# against f2obo-server and against f2obo-echo-server (bench/service/
# echo_server.cc: same API and messages, nothing behind it), side by side,
# for three shapes: tiny steps, 8 x 784 steps and 8 sync streams.  Prints
# both lines, the ratio of steps/s (server / echo) and the server's step
# p50 over the echo's p50 plus the server's round p50 (the goals: tiny >=
# 0.7 of the echo's steps/s, 8 x 784 p50 <= 1.25 x (echo p50 + round), 8
# sync streams >= 0.5; bench/RESULTS.md has the current figures).
# Usage: bench/service/echo_bench.sh [BUILD_DIR]   (needs the targets
# f2obo-server, f2obo-cli and f2obo-echo-server)
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

compare() {  # durability streams label bench-args...
  local a b
  server="$build/server/f2obo-server"
  a="$(run_loadgen "$@")"
  server="$build/bench/f2obo-echo-server"
  b="$(run_loadgen "$@")"
  echo "server  $a"
  echo "echo    $b"
  awk -v a="$(rate_of "$a")" -v b="$(rate_of "$b")" \
    'BEGIN { printf "        server / echo steps/s = %.2f\n", a / b }'
  # The measure for steps whose round is not negligible: the step's
  # p50 against the echo's p50 plus the server's round p50.
  awk -v s="$(p50_of "$a")" -v e="$(p50_of "$b")" -v r="$(round_of "$a")" \
    'BEGIN { printf "        server p50 / (echo p50 + round p50) = %.3f / (%.3f + %.3f) = %.2f\n",
             s, e, r, s / (e + r) }'
}

tiny=(--exact_every=0 --family=ridge_hpo --features=16 --rows_per_step=8 --algorithm=f2obo)
compare none 1 "ridge_hpo 8x16" "${tiny[@]}" --steps=3000
compare none 1 "logistic_hpo 8x784" --exact_every=0 --family=logistic_hpo --features=784 \
  --classes=10 --rows_per_step=8 --algorithm=f2obo --steps=1000
compare sync 8 "ridge_hpo 8x16" "${tiny[@]}" --steps=500
