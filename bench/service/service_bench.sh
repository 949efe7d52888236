#!/usr/bin/env bash
# `f2obo-cli bench` against a real f2obo-server on loopback (durability
# sync, the default): steps/s, rows/s, MB/s and client-observed latency for
# the batch shapes of the service issue -- 256 x 784 dense rows (the paper's
# Fashion-MNIST size, logistic_hpo, 10 classes) and 8-row batches where
# per-step overhead dominates -- with 1 and 16 concurrent streams, for
# SF2OBO and F2OBO.  Then the same 8-row stream with exact metrics every
# step versus off: they run on a worker, so step latency should not change.
# Usage: bench/service/service_bench.sh [BUILD_DIR]
set -euo pipefail
build="${1:-build}"
server="$build/server/f2obo-server"
cli="$build/client/f2obo-cli"
work="$(mktemp -d)"
pid=
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

. "$(dirname "$0")/lib.sh"

shape=(--family=logistic_hpo --features=784 --classes=10)
for algorithm in sf2obo f2obo; do
  for streams in 1 16; do
    run_loadgen sync "$streams" "$algorithm 256x784" "${shape[@]}" --algorithm="$algorithm" \
      --rows_per_step=256 --steps=$((streams == 1 ? 200 : 40)) --exact_every=0
    run_loadgen sync "$streams" "$algorithm 8x784" "${shape[@]}" --algorithm="$algorithm" \
      --rows_per_step=8 --steps=$((streams == 1 ? 2000 : 300)) --exact_every=0
  done
done
small=(--family=ridge_hpo --features=16 --rows_per_step=8 --algorithm=f2obo --steps=2000)
run_loadgen sync 1 "ridge_hpo 8x16, exact metrics off" "${small[@]}" --exact_every=0
run_loadgen sync 1 "ridge_hpo 8x16, exact every step" "${small[@]}" --exact_every=1
