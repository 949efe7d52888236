#!/usr/bin/python3
"""Does one session's big write hold up other sessions' steps?

Starts the real server (--server, a fresh --data_dir), creates a small
session "small" and steps it in a loop, each step with a 2 s deadline, while
another thread creates (then deletes) a quadratic session with a large
y_dim.  Prints the create's and delete's wall time, the small session's step
latencies (max, p99) during them, how many small steps missed their 2 s
deadline, and whether a create answered DEADLINE_EXCEEDED (--create_deadline)
left the session behind.

  /usr/bin/python3 bench/service/big_write_stall.py --server=build/server/f2obo-server \
      --python=build/python --y_dim=20000000
"""
import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--python", required=True, help="the built package's directory")
    ap.add_argument("--y_dim", type=int, default=20000000)
    ap.add_argument("--create_deadline", type=float, default=5.0)
    args = ap.parse_args()
    sys.path.insert(0, args.python)
    import grpc
    from f2obo.v1 import f2obo_pb2 as pb
    from f2obo.v1 import f2obo_pb2_grpc as rpc

    data = tempfile.mkdtemp(prefix="f2obo-stall-")
    proc = subprocess.Popen([args.server, "--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
                             "--data_dir=" + data, "--max_y_dim=%d" % (args.y_dim + 100)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    banner = proc.stdout.readline()
    port = banner.split("listening on ")[1].split(",")[0].rsplit(":", 1)[1]
    stub = rpc.F2oboStub(grpc.insecure_channel("127.0.0.1:" + port))

    def spec(y_dim):
        s = pb.SessionSpec(algorithm="f2obo")
        s.family.name = "quadratic"
        s.family.x_dim = 4
        s.family.y_dim = y_dim
        s.metrics.exact_every = 0
        s.constraint.ball.radius = 2.0
        return s

    stub.CreateSession(pb.CreateSessionRequest(session_id="small", spec=spec(4)), timeout=30)
    lat, missed, stop = [], [0], threading.Event()

    def step_loop():
        t = 1
        while not stop.is_set():
            req = pb.StepRequest(session_id="small", t=t)
            req.inner.m.rows, req.inner.m.cols = 4, 4
            req.inner.m.values.extend([0.01] * 16)
            req.inner.c.extend([0.5] * 4)
            req.upper.d.extend([-0.5] * 4)
            start = time.monotonic()
            try:
                r = stub.Step(req, timeout=2.0)
                t += 1
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                    raise
                missed[0] += 1
                # The retry says whether the late step was applied after all.
                r = stub.Step(req, timeout=120)
                if r.replayed:
                    missed.append("applied-after-DEADLINE_EXCEEDED t=%d" % t)
                t += 1
            lat.append((start, time.monotonic()))

    th = threading.Thread(target=step_loop)
    th.start()
    time.sleep(1.0)
    t0 = time.monotonic()
    outcome = "ok"
    try:
        stub.CreateSession(pb.CreateSessionRequest(session_id="big", spec=spec(args.y_dim)),
                           timeout=args.create_deadline)
    except grpc.RpcError as e:
        outcome = e.code().name
        if e.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
            sys.exit("create failed: %s %s" % (outcome, e.details()))
    create_answer = time.monotonic() - t0
    # Wait until the big session exists (or the create is known not to).
    exists = False
    for _ in range(600):
        try:
            stub.GetSession(pb.GetSessionRequest(session_id="big"), timeout=5)
            exists = True
            break
        except grpc.RpcError as e:
            if outcome == "ok" or e.code() != grpc.StatusCode.NOT_FOUND:
                raise
            time.sleep(0.2)
    create_done = time.monotonic() - t0
    t1 = time.monotonic()
    if exists:
        stub.DeleteSession(pb.DeleteSessionRequest(session_id="big"), timeout=300)
    delete_done = time.monotonic() - t1
    t2 = time.monotonic()
    stop.set()
    th.join()

    def overlapping(a, b):  # latencies of the steps in flight during [a, b]
        return sorted(e - s for s, e in lat if e >= a and s <= b)
    create_lat = overlapping(t0, t1)
    delete_lat = overlapping(t1, t2)
    proc.kill()
    proc.wait()

    def q(v, p):
        return v[min(len(v) - 1, int(p * len(v)))] if v else float("nan")

    print("y_dim %d: create answered %s after %.2f s, session exists %s (%.2f s); delete %.2f s"
          % (args.y_dim, outcome, create_answer, exists, create_done, delete_done))
    print("small steps in flight during create: %d, max %.3f s, p99 %.3f s; "
          "during delete: %d, max %.3f s"
          % (len(create_lat), q(create_lat, 1.0), q(create_lat, 0.99), len(delete_lat),
             q(delete_lat, 1.0)))
    print("small steps over their 2 s deadline: %d %s" % (missed[0], missed[1:]))


if __name__ == "__main__":
    main()
