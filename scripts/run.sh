#!/usr/bin/env bash
# Installs dependencies, builds, starts f2obo-server and streams a demo:
# Fashion-MNIST replayed as a class-imbalance-drifting stream (class i kept
# with probability rho^i, rho 0.6 -> 0.9 over four phases) into an SF2OBO
# session on logistic_hpo (one L2 coefficient per pixel, tuned online).
# The server keeps running afterwards; Ctrl-C stops it gracefully.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
# Tests and benchmarks off: their tools (promtool, chromium) come with
# deps.sh --test only, and the demo needs just the two programs.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DF2OBO_BUILD_TESTS=OFF \
  -DF2OBO_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target f2obo-server f2obo-cli

GRPC="${F2OBO_LISTEN:-127.0.0.1:50051}"
METRICS="${F2OBO_METRICS_LISTEN:-127.0.0.1:9464}"
fifo="$(mktemp -u)"
mkfifo "$fifo"
./build/server/f2obo-server --listen="$GRPC" --metrics_listen="$METRICS" >"$fifo" &
server=$!
trap 'kill -TERM "$server" 2>/dev/null || true; wait "$server" || true; rm -f "$fifo"' EXIT
trap 'exit 130' INT TERM
read -r banner <"$fifo"
echo "$banner"
echo "Live dashboard:     http://$METRICS/"
echo "Prometheus metrics: http://$METRICS/metrics"
# A demo session left by an earlier run (sessions are durable) is replaced.
./build/client/f2obo-cli delete --server="$GRPC" --session=demo >/dev/null 2>&1 || true
./build/client/f2obo-cli stream --server="$GRPC" --create --id=demo \
  --family=logistic_hpo --algorithm=sf2obo --gamma=0.01 --alpha_auto --beta_auto \
  --box=0,0.1 --steps="${F2OBO_DEMO_STEPS:-400}" --imbalance=0.6,0.7,0.8,0.9 --phase_steps=100 \
  --exact_every=20 "$@"
./build/client/f2obo-cli decision --server="$GRPC" --session=demo
echo
echo "Server still running on $GRPC (dashboard http://$METRICS/, metrics http://$METRICS/metrics)."
echo "Try: ./build/client/f2obo-cli sessions --server=$GRPC    Ctrl-C stops the server."
wait "$server"
