#!/usr/bin/env bash
# Steps/s of the service with --durability=sync versus none, for 1 and 16
# concurrent streams, via `f2obo-cli loadgen` against a real f2obo-server on
# loopback.  Usage: bench/service/durability_bench.sh [BUILD_DIR]
# Prints one line per (problem, durability, streams).
set -euo pipefail
build="${1:-build}"
server="$build/server/f2obo-server"
cli="$build/client/f2obo-cli"
work="$(mktemp -d)"
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

run() {  # durability streams label loadgen-args...
  local durability="$1" streams="$2" label="$3"
  shift 3
  rm -rf "$work/data"
  mkfifo "$work/banner" 2>/dev/null || true
  "$server" --listen=127.0.0.1:0 --metrics_listen= --data_dir="$work/data" \
    --durability="$durability" >"$work/banner" 2>"$work/server.log" &
  pid=$!
  read -r line <"$work/banner"
  port="$(echo "$line" | sed -E 's/.*listening on [^ ]+:([0-9]+),.*/\1/')"
  out="$("$cli" loadgen --server="127.0.0.1:$port" --sessions="$streams" \
           --threads="$streams" --exact_every=0 "$@" 2>&1)"
  kill -TERM "$pid"; wait "$pid" || true
  rate="$(echo "$out" | grep -oE '[0-9.]+ steps/s' | head -1)"
  lat="$(echo "$out" | grep -oE 'p50 .* p99 [0-9.]+ ms' | head -1 || true)"
  printf '%-28s %-5s %3s streams  %-18s %s\n' "$label" "$durability" "$streams" "$rate" "$lat"
}

small=(--family=ridge_hpo --features=32 --rows_per_step=64 --algorithm=f2obo --steps=400)
paper=(--family=logistic_hpo --features=784 --classes=10 --rows_per_step=512 --algorithm=f2obo
       --steps=60)
for streams in 1 16; do
  for durability in none sync; do
    run "$durability" "$streams" "ridge_hpo d=32, 64 rows" "${small[@]}"
  done
done
for streams in 1 16; do
  for durability in none sync; do
    run "$durability" "$streams" "logistic_hpo d=784, 512 rows" "${paper[@]}"
  done
done
