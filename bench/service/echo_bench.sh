#!/usr/bin/env bash
# The service path against its floor: the same `f2obo-cli bench` streams
# against f2obo-server and against f2obo-echo-server (bench/service/
# echo_server.cc: same API and messages, nothing behind it), side by side,
# for the shapes of issue 15's table.  Prints both lines and the ratio of
# steps/s (server / echo).
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
}

tiny=(--exact_every=0 --family=ridge_hpo --features=16 --rows_per_step=8 --algorithm=f2obo)
compare none 1 "ridge_hpo 8x16" "${tiny[@]}" --steps=3000
compare none 1 "logistic_hpo 8x784" --exact_every=0 --family=logistic_hpo --features=784 \
  --classes=10 --rows_per_step=8 --algorithm=f2obo --steps=1000
compare sync 8 "ridge_hpo 8x16" "${tiny[@]}" --steps=500
