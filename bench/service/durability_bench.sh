#!/usr/bin/env bash
# Steps/s of the service with --durability=sync versus none, for 1 and 16
# concurrent streams, via `f2obo-cli bench` against a real f2obo-server on
# loopback.  Usage: bench/service/durability_bench.sh [BUILD_DIR]
# Prints one line per (problem, durability, streams).
set -euo pipefail
build="${1:-build}"
server="$build/server/f2obo-server"
cli="$build/client/f2obo-cli"
work="$(mktemp -d)"
pid=
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

. "$(dirname "$0")/lib.sh"

small=(--exact_every=0 --family=ridge_hpo --features=32 --rows_per_step=64 --algorithm=f2obo --steps=400)
paper=(--exact_every=0 --family=logistic_hpo --features=784 --classes=10 --rows_per_step=512 --algorithm=f2obo
       --steps=60)
for streams in 1 16; do
  for durability in none sync; do
    run_loadgen "$durability" "$streams" "ridge_hpo d=32, 64 rows" "${small[@]}"
  done
done
for streams in 1 16; do
  for durability in none sync; do
    run_loadgen "$durability" "$streams" "logistic_hpo d=784, 512 rows" "${paper[@]}"
  done
done
