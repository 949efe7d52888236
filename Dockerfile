# Multi-stage build on Debian 12.  Until the server lands (see README), the
# image runs the in-process replay demo.
FROM debian:12 AS build
WORKDIR /src
COPY . .
RUN bash scripts/deps.sh \
 && cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DF2OBO_BUILD_TESTS=OFF \
      -DF2OBO_BUILD_BENCHMARKS=OFF \
 && cmake --build /build -j"$(nproc)" --target f2obo-replay

FROM debian:12
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libabsl20220623 zlib1g dataset-fashion-mnist \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 f2obo
COPY --from=build /build/apps/f2obo-replay /usr/local/bin/f2obo-replay
USER f2obo
ENTRYPOINT ["/usr/local/bin/f2obo-replay"]
