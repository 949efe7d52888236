#!/usr/bin/env bash
# Installs dependencies, builds everything (tests included) and runs ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --test
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DF2OBO_BUILD_TESTS=ON -DF2OBO_BUILD_BENCHMARKS=ON >/dev/null
cmake --build build -j"$(nproc)"
cd build && ctest --output-on-failure -j"$(nproc)" --timeout 900
