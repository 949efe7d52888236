#!/usr/bin/env bash
# Installs the Debian 12 packages f2obo builds and runs with (needs root).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
as_root apt-get update -qq
as_root apt-get install -y -qq --no-install-recommends \
  build-essential cmake pkg-config ca-certificates \
  libeigen3-dev libabsl-dev zlib1g-dev \
  libgtest-dev libgmock-dev libbenchmark-dev \
  dataset-fashion-mnist >/dev/null
