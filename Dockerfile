# f2obo-server image: multi-stage on Debian 12, built from source, non-root.
# (No Docker engine runs on our build machines, so the test suite never
# builds it; tests/deploy checks its flags, ports, user, copied paths and
# that its runtime packages provide every library the binaries load.)
FROM debian:12 AS build
# The image runs on CPUs other than the build's, so it is compiled for a
# documented baseline instead of -march=native (docs/operations.md, "Build"); the binaries
# refuse to start, naming the missing features, on a CPU below it.
# `docker build --build-arg F2OBO_ARCH=native .` builds for the build host.
ARG F2OBO_ARCH=x86-64-v3
WORKDIR /src
COPY . .
RUN bash scripts/deps.sh \
 && cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DF2OBO_BUILD_TESTS=OFF \
      -DF2OBO_BUILD_BENCHMARKS=OFF -DF2OBO_ARCH="${F2OBO_ARCH}" \
 && cmake --build /build -j"$(nproc)" --target f2obo-server f2obo-cli

FROM debian:12
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libgrpc++1.51 libprotobuf32 libabsl20220623 libcivetweb1 libsqlite3-0 libpq5 zlib1g \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /data f2obo \
 && mkdir -p /data && chown f2obo /data
COPY --from=build /build/server/f2obo-server /build/client/f2obo-cli /usr/local/bin/
USER f2obo
WORKDIR /data
VOLUME /data
EXPOSE 50051 9464
HEALTHCHECK --interval=10s --timeout=3s CMD ["f2obo-cli", "health", "--server=127.0.0.1:50051"]
# Flags in CMD, so `docker run f2obo:latest --flag=...` (or compose's
# `command:`) replaces them instead of repeating them.
ENTRYPOINT ["f2obo-server"]
CMD ["--listen=0.0.0.0:50051", "--metrics_listen=0.0.0.0:9464"]
