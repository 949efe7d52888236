#!/usr/bin/env bash
# Installs the Debian 12 packages f2obo builds and runs with (needs root).
#   deps.sh          build + run dependencies
#   deps.sh --test   also the tools the test suite drives (promtool, the Python
#                    client's packages, headless Chromium, PostgreSQL)
#   deps.sh --bench  also what only benchmarks use (perf), beside --test's
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
packages=(
  build-essential cmake pkg-config ca-certificates
  libeigen3-dev libabsl-dev zlib1g-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  # civetweb's CMake package refers to the civetweb binary, so both.
  libcivetweb-dev civetweb libsqlite3-dev
  # The PostgreSQL store's client library (libpq, its C API).
  libpq-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  dataset-fashion-mnist
)
if [ "${1:-}" = "--test" ] || [ "${1:-}" = "--bench" ]; then
  packages+=(prometheus python3-grpcio python3-protobuf openssl python3-yaml)
  # The scale-out tests run the replicas behind a real nginx (deploy/nginx).
  packages+=(nginx)
  # The PostgreSQL store's tests start their own PostgreSQL (initdb, pg_ctl,
  # pg_basebackup of the server package; tests/server/store/postgres).
  packages+=(postgresql-15)
  # The Python package (client/python) is pip-installed offline from the
  # build and tested with pytest; its online-HPO example trains a PyTorch
  # model on scikit-learn's digits and plots with matplotlib.
  packages+=(python3-numpy python3-scipy python3-pip python3-setuptools python3-wheel
             python3-venv python3-pytest python3-torch python3-sklearn python3-matplotlib)
  # The quality suite's search at equal compute (bench/quality/suite_common.py)
  # is Optuna's TPE.
  packages+=(python3-optuna)
  # The dashboard test drives the page in headless Chromium.
  packages+=(chromium chromium-driver)
  # fuzz/run_fuzz.sh: clang with libFuzzer/ASan/UBSan runtimes, llvm-symbolizer.
  packages+=(clang-14 libclang-rt-14-dev llvm-14)
  # scripts/check_format.sh (ctest "format"): the committed .clang-format.
  packages+=(clang-format-14)
fi
if [ "${1:-}" = "--bench" ]; then
  # bench/service/thread_cpu.sh: CPU time and switches per thread (perf stat).
  packages+=(linux-perf)
fi
# A machine whose last package run was interrupted refuses every apt-get
# until dpkg finishes configuring; doing it first is harmless otherwise.
as_root dpkg --configure -a
as_root apt-get update -qq
as_root apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
