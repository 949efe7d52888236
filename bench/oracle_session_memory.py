#!/usr/bin/python3
"""Server resident memory per oracle session at a real model size.

Starts a real f2obo-server on loopback (a fresh data directory, the
default durability), reads its VmRSS (/proc/<pid>/status), creates
--sessions oracle sessions of y_dim = --y_dim (x_dim = 4, f2obo, K =
--inner_steps) and steps each --steps times over OracleSteps, answered by
a numpy oracle whose work is O(y_dim):
    g(x, y) = 1/2 ||y - x_0 c||^2 + 1/2 mu ||y||^2,   f(x, y) = 1/2 ||y - d||^2,
then reads VmRSS again (and VmHWM, the peak).  Prints the growth per
session in MiB and in copies of y (y_dim float64), and the peak over the
idle server in copies of y (with --sessions=1: what one step holds at its
peak).  --float32: the answers on the float32 wire (OracleStepOpen.float32).

    /usr/bin/python3 bench/oracle_session_memory.py build/server/f2obo-server [--y_dim=1000000]
    /usr/bin/python3 bench/oracle_session_memory.py build/server/f2obo-server --y_dim=10000000 \
        --sessions=2 --steps=3 --max_message_bytes=268435456

The sessions are stepped one after the other, each on its own stream
(kept open, as a Tuner keeps its stream): what a session holds between
steps is what counts.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import f2obo

_BANNER = re.compile(r"listening on [^ ]+:(\d+)")


def rss_kib(pid, field="VmRSS"):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError("no %s in /proc/%d/status" % (field, pid))


def oracle(y_dim, seed):
    rng = np.random.default_rng(seed)
    c, d = rng.normal(size=y_dim), rng.normal(size=y_dim)
    mu = 0.1

    def evaluate(q):
        if q.function == "g":
            r = q.y - q.x[0] * c
            value = 0.5 * (r @ r) + 0.5 * mu * (q.y @ q.y) if q.want_value else None
            gx = np.zeros(len(q.x)) if q.want_grad_x else None
            if gx is not None:
                gx[0] = -(r @ c)
            gy = r + mu * q.y if q.want_grad_y else None
            return value, gx, gy
        r = q.y - d
        return (0.5 * (r @ r) if q.want_value else None,
                np.zeros(len(q.x)) if q.want_grad_x else None,
                r if q.want_grad_y else None)
    return evaluate


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("server_binary")
    ap.add_argument("--y_dim", type=int, default=1_000_000)
    ap.add_argument("--sessions", type=int, default=3)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--inner_steps", type=int, default=5)
    ap.add_argument("--server_flag", action="append", default=[],
                    help="extra server flag (repeatable)")
    ap.add_argument("--max_message_bytes", type=int, default=0,
                    help="the server's and the client's message limit (0: their defaults, "
                         "64 MiB: one vector of at most ~8.3 x 10^6 float64)")
    ap.add_argument("--float32", action="store_true",
                    help="answers on the float32 wire")
    ap.add_argument("--automatic_steps", action="store_true",
                    help="alpha and beta automatic (the Tuner's default: two secant vectors)")
    a = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="f2obo-mem-")
    proc = subprocess.Popen([a.server_binary, "--listen=127.0.0.1:0",
                             "--metrics_listen=127.0.0.1:0", "--data_dir=" + tmp + "/data"]
                            + a.server_flag
                            + (["--max_message_bytes=%d" % a.max_message_bytes]
                               if a.max_message_bytes else []), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    try:
        m = _BANNER.search(proc.stdout.readline())
        if not m:
            sys.exit("the server did not start")
        address = "127.0.0.1:" + m.group(1)
        y_mib = a.y_dim * 8 / 2**20
        streams = []
        limits = {"max_message_bytes": a.max_message_bytes} if a.max_message_bytes else {}
        with f2obo.Client(address, **limits) as client:  # else every limit at its default
            client.list_sessions()  # connected, the service warmed up
            base = rss_kib(proc.pid)
            for i in range(a.sessions):
                s = client.create_session(family="oracle", x_dim=4, y_dim=a.y_dim,
                                          algorithm="f2obo", inner_steps=a.inner_steps,
                                          gamma=0.01, box=(0.0, 1.0), seed=i,
                                          **({} if a.automatic_steps
                                             else dict(alpha=0.1, beta=0.1)))
                stream = f2obo.OracleStream(client, s.id)
                stream.float32 = a.float32
                evaluate = oracle(a.y_dim, i)
                for _ in range(a.steps):
                    stream.step(evaluate, upper_rows=64, inner_rows=64)
                streams.append(stream)
                now = rss_kib(proc.pid)
                print("after session %d: RSS %.1f MiB (+%.1f MiB over the idle server)"
                      % (i + 1, now / 1024, (now - base) / 1024), flush=True)
            end = rss_kib(proc.pid)
            peak = rss_kib(proc.pid, "VmHWM")
            for stream in streams:
                stream.close()
        per = (end - base) / 1024 / a.sessions
        print("y_dim %d (y = %.2f MiB), %d sessions x %d steps (K = %d, %s answers): RSS per "
              "session %.1f MiB = %.1f copies of y; server peak %.1f MiB = idle + %.1f copies "
              "of y" % (a.y_dim, y_mib, a.sessions, a.steps, a.inner_steps,
                        "float32" if a.float32 else "float64", per, per / y_mib, peak / 1024,
                        (peak - base) / 1024 / y_mib))
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
