#!/usr/bin/python3
"""The Python package's costs, as ratios measured side by side in one run.

1. Batch encoding: f2obo.to_batch on a 256 x 784 float64 batch (the
   package's packed-bytes path) against building the same message with
   protobuf's element-by-element extend; both messages are compared equal.
2. Streaming: steps/s of Session.stream (numpy batches from
   f2obo.DriftingStream) against `f2obo-cli stream` on the same data and
   options into a real server on loopback, sessions on the same server.
Rounds are interleaved and the medians reported, with `uptime`'s load.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_client_bench.py \\
        --server_binary=build/server/f2obo-server --cli=build/client/f2obo-cli
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import f2obo


def encoding(rounds):
    X = np.random.default_rng(0).normal(size=(256, 784))
    y = np.arange(256) % 10

    def fast():
        return f2obo.to_batch((X, y))

    def slow():
        b = f2obo.pb.Batch()
        b.dense.rows, b.dense.cols = X.shape
        b.dense.values.extend(X.ravel().tolist())
        b.labels.extend(y.tolist())
        return b
    assert fast() == slow()
    times = {"fast": [], "slow": []}
    for _ in range(rounds):
        for name, fn in (("fast", fast), ("slow", slow)):
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    f, s = statistics.median(times["fast"]), statistics.median(times["slow"])
    print("encode 256x784: to_batch %.2f ms, element-wise extend %.2f ms, ratio %.1fx"
          % (f * 1e3, s * 1e3, s / f))


def streaming(args, rounds):
    work = tempfile.mkdtemp(prefix="f2obo-pybench-")
    server = subprocess.Popen([args.server_binary, "--listen=127.0.0.1:0",
                               "--metrics_listen=127.0.0.1:0", "--data_dir=" + work,
                               "--durability=none"], stdout=subprocess.PIPE, text=True)
    port = re.search(r"listening on [^ ]+:(\d+)", server.stdout.readline()).group(1)
    address = "127.0.0.1:" + port
    rng = np.random.default_rng(1)
    rows, d, C = 4000, 784, 10
    X, y = rng.random((rows, d)), rng.integers(0, C, size=rows)
    path = os.path.join(work, "data.csv")
    with open(path, "w") as f:
        for r in range(rows):
            f.write(",".join(repr(float(v)) for v in X[r]) + ",%d\n" % y[r])
    spec = dict(family="logistic_hpo", features=d, classes=C, algorithm="f2obo_sl",
                box=(0.0, 0.1), exact_every=0)
    client = f2obo.Client(address)
    rates = {"python": [], "cli": []}
    try:
        for k in range(rounds):
            s = client.create_session(session_id="py%d" % k, **spec)
            stream = f2obo.DriftingStream(X, y, rows_per_step=args.rows_per_step, imbalance=(),
                                          seed=k + 1)
            t = time.perf_counter()
            for _ in s.stream(stream.steps(1, args.steps)):
                pass
            rates["python"].append(args.steps / (time.perf_counter() - t))
            target = "--server=" + address
            subprocess.run([args.cli, "create", target, "--id=cli%d" % k,
                            "--family=logistic_hpo", "--features=%d" % d, "--classes=%d" % C,
                            "--algorithm=f2obo_sl", "--box=0,0.1", "--exact_every=0"],
                           check=True, capture_output=True)
            out = subprocess.run([args.cli, "stream", target, "--session=cli%d" % k,
                                  "--data=" + path, "--steps=%d" % args.steps,
                                  "--rows_per_step=%d" % args.rows_per_step, "--imbalance=",
                                  "--seed=%d" % (k + 1)], check=True, capture_output=True,
                                 text=True).stdout
            # The CLI's own count: steps over its stream time (file parsing excluded).
            rates["cli"].append(float(re.search(r"\(([\d.]+) steps/s\)", out).group(1)))
    finally:
        server.terminate()
        server.wait()
    p, c = statistics.median(rates["python"]), statistics.median(rates["cli"])
    print("stream %d steps of %d x %d rows (f2obo_sl, durability none): python %.1f steps/s, "
          "f2obo-cli %.1f steps/s, python/cli %.2f" % (args.steps, args.rows_per_step, d, p, c,
                                                       p / c))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server_binary", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rows_per_step", type=int, default=256)
    args = ap.parse_args()
    print("load average:", os.getloadavg())
    encoding(args.rounds * 10)
    streaming(args, args.rounds)
    print("load average:", os.getloadavg())
    return 0


if __name__ == "__main__":
    sys.exit(main())
