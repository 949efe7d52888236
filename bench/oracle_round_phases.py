#!/usr/bin/python3
"""Where the service side of bench/torch_oracle_round.py's round goes: one
Tuner steps an oracle session of that MLP (--hidden, --float32) for
--steps rounds after one warm-up, timing its phases (the client's torch
evaluation, its whole answer, the wait for the server's next message, done's
y), and prints the client's and the server process's CPU per round;
--hand: the hand-written round's time and CPU; --cprofile: the client's
profile; --perf=FILE: `perf record -g` of the server meanwhile (read with
`perf report -i FILE --no-children --sort symbol`).

    PYTHONPATH=build/python /usr/bin/python3 bench/oracle_round_phases.py \
        build/server/f2obo-server --hidden=12579 --float32 --steps=2 --hand --perf=perf.data
"""
import sys, time, os, cProfile, pstats, subprocess
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_oracle_round as B
import torch, numpy as np
import f2obo, f2obo.torch
from f2obo import oracle as O

T = {}
def add(k, dt):
    T[k] = T.get(k, 0.0) + dt

class Proxy:
    def __init__(self, call): self.call = call
    def __next__(self):
        s = time.perf_counter(); m = next(self.call); add("wait(next msg)", time.perf_counter() - s); return m
    def __iter__(self): return self
    def cancel(self): return self.call.cancel()
    def __getattr__(self, k): return getattr(self.call, k)

orig_open = O.OracleStream._open
def _open(self):
    orig_open(self); self._call = Proxy(self._call)
O.OracleStream._open = _open

orig_answer = O.OracleStream._answer
def _answer(self, request, em):
    s = time.perf_counter()
    r = orig_answer(self, request, em)
    add("client _answer total", time.perf_counter() - s)
    return r
O.OracleStream._answer = _answer

orig_tanswer = f2obo.torch.Tuner._answer
def tanswer(self, q, batch, t):
    s = time.perf_counter(); r = orig_tanswer(self, q, batch, t); add("torch evaluate", time.perf_counter() - s); return r
f2obo.torch.Tuner._answer = tanswer

orig_done = O.OracleStream._done_y
def done_y(self, p):
    s = time.perf_counter(); r = orig_done(self, p); add("done_y", time.perf_counter() - s); return r
O.OracleStream._done_y = done_y
orig_load = f2obo.torch.Tuner._load_y
def load_y(self, f):
    s = time.perf_counter(); r = orig_load(self, f); add("load_y", time.perf_counter() - s); return r
f2obo.torch.Tuner._load_y = load_y

import argparse
ap = argparse.ArgumentParser()
ap.add_argument("server")
ap.add_argument("--hidden", type=int, default=1258)
ap.add_argument("--float32", action="store_true")
ap.add_argument("--steps", type=int, default=2)
ap.add_argument("--perf", default="")
ap.add_argument("--cprofile", action="store_true")
ap.add_argument("--hand", action="store_true")
a = ap.parse_args()
B.HIDDEN = a.hidden
B.DTYPE = torch.float32 if a.float32 else torch.float64
steps = B.ring()
proc, data, address = B.start_server(a.server, "none", 600, 268435456)
try:
    client = f2obo.Client(address, max_message_bytes=268435456)
    tuner = f2obo.torch.Tuner(client, B.mlp(), {"wd": f2obo.torch.Hyperparameter(
        torch.full((2,), 1e-3, dtype=B.DTYPE), box=(0.0, 0.01))}, B.g_loss, B.f_loss,
        algorithm="f2obo", inner_steps=B.K, alpha=B.ALPHA, beta=B.BETA, gamma=B.GAMMA,
        lambda1=B.LAMBDA1, tau=B.TAU, sync_every=1)
    tuner.step(*steps[0])  # warm-up
    T.clear(); tuner._stream.stats.clear()
    perf = None
    if a.perf:
        perf = subprocess.Popen(["perf", "record", "-F", "499", "-g", "-o", a.perf, "-p", str(proc.pid)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)
    c0 = os.times()
    pst = open("/proc/%d/stat" % proc.pid).read().split()
    s0 = (int(pst[13]) + int(pst[14])) / os.sysconf("SC_CLK_TCK")
    prof = cProfile.Profile() if a.cprofile else None
    start = time.perf_counter()
    if prof: prof.enable()
    for i in range(a.steps):
        s = time.perf_counter(); tuner.step(*steps[(i + 1) % len(steps)]); add("step", time.perf_counter() - s)
    if prof: prof.disable()
    wall = time.perf_counter() - start
    c1 = os.times()
    pst = open("/proc/%d/stat" % proc.pid).read().split()
    s1 = (int(pst[13]) + int(pst[14])) / os.sysconf("SC_CLK_TCK")
    if perf:
        perf.send_signal(2); perf.wait()
    print("wall s per round, %d steps, n=%d:" % (a.steps, tuner._flat_y().size))
    for k, v in sorted(T.items(), key=lambda kv: -kv[1]):
        print("  %-28s %8.3f" % (k, v / a.steps))
    print("  client CPU %.3f  server CPU %.3f  wall %.3f" % ((c1.user + c1.system - c0.user - c0.system) / a.steps, (s1 - s0) / a.steps, wall / a.steps))
    print("  stats", {k: v / a.steps for k, v in tuner._stream.stats.items()})
    if prof:
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    if a.hand:
        hand = B.Hand(); hand.round(steps[0])
        s = time.perf_counter(); c = time.process_time()
        for i in range(a.steps): hand.round(steps[(i + 1) % len(steps)])
        print("  hand round %.3f cpu %.3f" % ((time.perf_counter() - s) / a.steps, (time.process_time() - c) / a.steps))
    tuner.close(); client.close()
finally:
    proc.terminate(); proc.wait()
