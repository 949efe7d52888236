#!/usr/bin/env bash
# Installs dependencies, builds, and runs the demo: Fashion-MNIST replayed
# as a class-imbalance-drifting stream through an SF2OBO session on
# logistic_hpo (online L2 hyperparameter tuning), printing per-step metrics.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DF2OBO_BUILD_TESTS=OFF \
  -DF2OBO_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target f2obo-replay
./build/apps/f2obo-replay "$@"
