#!/usr/bin/env bash
# Installs dependencies, builds the programs and the tests and runs ctest.
# The benchmarks (bench/) are not built: no test runs them (configure with
# -DF2OBO_BUILD_BENCHMARKS=ON to build them, as the README's build command
# does by default).  Warnings of our code are errors here (F2OBO_WERROR);
# third-party headers come in as system headers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --test
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DF2OBO_BUILD_TESTS=ON -DF2OBO_BUILD_BENCHMARKS=OFF -DF2OBO_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
cd build && ctest --output-on-failure -j"$(nproc)" --timeout 900
