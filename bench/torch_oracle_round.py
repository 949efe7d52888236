#!/usr/bin/python3
"""A K = 5 F2OBO round of an MLP: through the service (an oracle session
answered by f2obo.torch) vs hand-written in PyTorch in one process (the
speed goal: service <= 1.2 x hand at 10^5 and 10^6 parameters).

Model: MLP 784-H-10 (tanh; H = --hidden: 128 gives 101,770 parameters,
1258 gives 1,000,120, 12579 gives 10,000,315), float64 (--float32: the
model, the data and the hand-written round in float32, and the Tuner's
gradients on the float32 wire, OracleStepOpen.float32); x = one
weight decay per layer (2 entries, box [0, 0.01]).  Batches: 64 rows
(upper and inner), random Fashion-MNIST-shaped data, a ring of 8 steps.
    g(y; x) = CE(inner) + 1/2 sum_l x_l ||W_l||^2 + 1/2 mu0 ||y||^2
    f(y)    = CE(upper)
Both sides do the same work per round: the prequential f(x_t, y_t); K inner
iterations (grad_y g at z and y, grad_y f at y; z and y updated); the
hypergradient (grad_x, grad_y of f and g at y, of g at z); x's projected
step; lambda's update.  torch.set_num_threads(1) on both sides.

Service side: a real f2obo-server on loopback (--durability=none by
default, --durability=sync to include the store), one Tuner; per round
`Tuner.step` (K + 2 round trips) and, with sync_every = 1, a
GetDecision to load y into the module.  Hand side: the round as one
would write it in PyTorch (torch.autograd.grad through functional_call).

    /usr/bin/python3 bench/torch_oracle_round.py build/server/f2obo-server [--rounds=40]
        [--hidden=1258] [--protocols=recipes,values,recipes-f64wire] [--float32]

prints milliseconds per round (median of --rounds after 3 warm-up rounds,
the versions run in turn round by round) and the ratio, the CPU
milliseconds per round (this process's, all threads, plus the service's
server process's: median) and their ratio, the bytes each
protocol moved per round and per inner iteration and its round trips per
round (--protocols: the recipe protocol of docs/oracle-protocol.md, and
points sent as values as before it; recipes-f64wire: recipes with a
float32 model's gradients sent as float64; all synced every step), and with
--profile where the service side's time goes.
"""
import argparse
import cProfile
import os
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

import f2obo
import f2obo.torch

torch.set_num_threads(1)
K, ALPHA, BETA, GAMMA, LAMBDA1, TAU, MU0 = 5, 0.1, 0.1, 0.001, 5.0, 1.0, 1e-3
D, C, ROWS = 784, 10, 64
HIDDEN = 128  # --hidden
DTYPE = torch.float64  # --float32


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(D, HIDDEN), torch.nn.Tanh(),
                               torch.nn.Linear(HIDDEN, C)).to(DTYPE)


def g_loss(model, hp, batch):
    X, y = batch
    ws = [p for n, p in model.named_parameters() if n.endswith("weight")]
    decay = sum(hp["wd"][i] * (w * w).sum() for i, w in enumerate(ws))
    ridge = sum((p * p).sum() for p in model.parameters())
    return torch.nn.functional.cross_entropy(model(X), y) + 0.5 * decay + 0.5 * MU0 * ridge


def f_loss(model, hp, batch):
    X, y = batch
    return torch.nn.functional.cross_entropy(model(X), y)


def ring(n=8, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [tuple((torch.rand(ROWS, D, generator=g, dtype=torch.float64).to(DTYPE),
                   torch.randint(0, C, (ROWS,), generator=g)) for _ in range(2))
            for _ in range(n)]


def t_wire(protocol, float32):
    """Whether the Tuner of `protocol` sends float32 (its default for a
    float32 model)."""
    return float32 and not protocol.startswith("recipes-f64wire")


# ---- hand-written, one process ------------------------------------------------

class Hand:
    def __init__(self):
        self.model = mlp()
        self.names = [n for n, _ in self.model.named_parameters()]
        self.shapes = [p.shape for _, p in self.model.named_parameters()]
        self.sizes = [p.numel() for _, p in self.model.named_parameters()]
        self.y = torch.cat([p.detach().reshape(-1) for p in self.model.parameters()])
        self.z = self.y.clone()
        self.x = torch.full((2,), 1e-3, dtype=DTYPE)
        self.lam, self.t = LAMBDA1, 1

    def call(self, loss, x, theta, batch):
        params = {n: v.view(s) for n, v, s in zip(self.names, theta.split(self.sizes),
                                                   self.shapes)}
        return loss(f2obo.torch._ModelAt(self.model, params), {"wd": x}, batch)

    def round(self, step):
        upper, inner = step
        with torch.no_grad():
            _ = self.call(f_loss, self.x, self.y, upper).item()  # prequential
        beta = BETA / self.lam
        y, z = self.y, self.z
        for _ in range(K):
            zv = z.clone().requires_grad_()
            yv = y.clone().requires_grad_()
            gz, = torch.autograd.grad(self.call(g_loss, self.x, zv, inner), zv)
            gy_g, = torch.autograd.grad(self.call(g_loss, self.x, yv, inner), yv)
            gy_f, = torch.autograd.grad(self.call(f_loss, self.x, yv, upper), yv)
            z = z - ALPHA * gz
            y = y - beta * (gy_f + self.lam * gy_g)
        x = self.x.clone().requires_grad_()
        yv, zv = y.clone().requires_grad_(), z.clone().requires_grad_()
        fx, fy = torch.autograd.grad(self.call(f_loss, x, yv, upper), (x, yv), allow_unused=True)
        gxy, gyy = torch.autograd.grad(self.call(g_loss, x, yv, inner), (x, yv))
        gxz, gzz = torch.autograd.grad(self.call(g_loss, x, zv, inner), (x, zv))
        fx = torch.zeros_like(x) if fx is None else fx
        with torch.no_grad():
            h = fx + self.lam * (gxy - gxz)
            _ = (fy + self.lam * gyy).norm().item(), gzz.norm().item()
            self.x = (self.x - GAMMA * h).clamp(0.0, 0.01)
        self.y, self.z = y, z
        self.lam *= (1.0 + 1.0 / self.t) ** TAU
        self.t += 1


# ---- through the service -------------------------------------------------------

def start_server(binary, durability, budget, max_message_bytes):
    data = tempfile.mkdtemp(prefix="f2obo-bench-")
    proc = subprocess.Popen([binary, "--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
                             "--data_dir=" + data, "--durability=" + durability,
                             "--round_budget_seconds=%g" % budget]
                            + (["--max_message_bytes=%d" % max_message_bytes]
                               if max_message_bytes else []),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    m = re.search(r"listening on [^ ]+:(\d+)", proc.stdout.readline())
    if not m:
        proc.kill()
        raise SystemExit("%s did not start" % binary)
    return proc, data, "127.0.0.1:" + m.group(1)


def process_cpu(pid):
    """Seconds of CPU (user + system, all threads) process `pid` used."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def time_interleaved(fns, steps, rounds, warmup=3, pids=()):
    """Median ms per round of each of `fns`, run in turn round by round, so
    that the other load of a shared machine falls on all of them alike;
    and the median CPU ms of this process plus the server `pids[i]` (None:
    none) a round uses, which a loaded machine inflates less than the
    time."""
    for i in range(warmup):
        for fn in fns:
            fn(steps[i % len(steps)])
    times = [[] for _ in fns]
    cpus = [[] for _ in fns]
    pids = list(pids) + [None] * (len(fns) - len(pids))
    for i in range(rounds):
        for fn, out, cpu, pid in zip(fns, times, cpus, pids):
            server = process_cpu(pid) if pid else 0.0
            start, start_cpu = time.perf_counter(), time.process_time()
            fn(steps[i % len(steps)])
            out.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu
                       + (process_cpu(pid) - server if pid else 0.0))
    return ([1e3 * statistics.median(t) for t in times],
            [1e3 * statistics.median(c) for c in cpus])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("server_binary")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--durability", default="none")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--hidden", type=int, default=128)
    # A loaded machine's 10^6-parameter round can outlast the default 30 s.
    ap.add_argument("--round_budget_seconds", type=float, default=30)
    ap.add_argument("--protocols", default="recipes,values")
    ap.add_argument("--float32", action="store_true")
    ap.add_argument("--compare_server", default="",
                    help="another server binary, stepped by one more Tuner in the same run")
    # Above ~8.3 x 10^6 parameters one y (float64) exceeds the default 64 MiB
    # message: raised on the server and the client (0: the defaults).
    ap.add_argument("--max_message_bytes", type=int, default=0)
    a = ap.parse_args()
    global HIDDEN, DTYPE
    HIDDEN = a.hidden
    DTYPE = torch.float32 if a.float32 else torch.float64
    protocols = a.protocols.split(",")
    steps = ring()
    hand = Hand()
    n_params = hand.y.numel()

    proc, data, address = start_server(a.server_binary, a.durability, a.round_budget_seconds,
                                       a.max_message_bytes)
    servers = [(proc, data)]
    limits = {"max_message_bytes": a.max_message_bytes} if a.max_message_bytes else {}
    try:
        client = f2obo.Client(address, **limits)
        clients = [client] * len(protocols)
        if a.compare_server:
            # Another build's server, its Tuner (the first protocol) one more
            # version of the same interleaved run.
            p2, d2, address2 = start_server(a.compare_server, a.durability,
                                            a.round_budget_seconds, a.max_message_bytes)
            servers.append((p2, d2))
            clients.append(f2obo.Client(address2, **limits))
            protocols.append(protocols[0] + " (--compare_server)")
        tuners = [f2obo.torch.Tuner(
            c, mlp(), {"wd": f2obo.torch.Hyperparameter(
                torch.full((2,), 1e-3, dtype=DTYPE), box=(0.0, 0.01))},
            g_loss, f_loss, algorithm="f2obo", inner_steps=K, alpha=ALPHA, beta=BETA,
            gamma=GAMMA, lambda1=LAMBDA1, tau=TAU, sync_every=1,
            float32_wire=None if t_wire(p, True) else False)
            for p, c in zip(protocols, clients)]
        for t, protocol in zip(tuners, protocols):
            t._stream.recipes = not protocol.startswith("values")
        pids = [None] + [servers[1 if p.endswith("(--compare_server)") else 0][0].pid
                         for p in protocols]
        times, cpus = time_interleaved(
            [hand.round] + [lambda s, t=t: t.step(*s) for t in tuners], steps, a.rounds,
            a.warmup, pids)
        hand_ms = times[0]
        # What each protocol moved: one more round with fresh counters.
        moved = []
        for t in tuners:
            t._stream.stats.clear()
            t.step(*steps[0])
            moved.append(dict(t._stream.stats))
        if a.profile:
            prof = cProfile.Profile()
            prof.enable()
            for i in range(10):
                tuners[0].step(*steps[i % len(steps)])
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(18)
        for t in tuners:
            t.close()
        for c in set(clients):
            c.close()
    finally:
        for p, d in servers:
            p.terminate()
            p.wait()
            shutil.rmtree(d, ignore_errors=True)
    print("MLP %d-%d-%d: %d parameters, %d-row batches, K = %d, %s, torch %s, "
          "threads %d, server --durability=%s"
          % (D, HIDDEN, C, n_params, ROWS, K, str(DTYPE).replace("torch.", ""),
             torch.__version__, torch.get_num_threads(), a.durability))
    print("%-44s %10s %8s %12s %8s %12s %12s %12s" % (
        "round", "ms", "x hand", "CPU ms", "x hand", "MB down", "MB up", "round trips"))
    print("%-44s %10.2f %8.2f %12.2f %8.2f" % ("hand-written PyTorch, one process", hand_ms, 1.0,
                                              cpus[0], 1.0))
    for protocol, ms, cpu, m in zip(protocols, times[1:], cpus[1:], moved):
        wire = "float32" if t_wire(protocol, a.float32) else "float64"
        print("%-44s %10.2f %8.2f %12.2f %8.2f %12.3f %12.3f %12d"
              % ("service (%s, %s wire), synced every step" % (protocol, wire), ms, ms / hand_ms,
                 cpu, cpu / cpus[0], m.get("down_bytes", 0) / 1e6, m.get("up_bytes", 0) / 1e6,
                 m.get("requests", 0) + 1))
    for protocol, m in zip(protocols, moved):
        print("%s: %.1f bytes per parameter per inner iteration (whole round / K; y = %d "
              "float64 = %.2f MB)" % (protocol, (m.get("down_bytes", 0) + m.get("up_bytes", 0))
                                      / K / n_params, n_params, 8e-6 * n_params))


if __name__ == "__main__":
    main()
