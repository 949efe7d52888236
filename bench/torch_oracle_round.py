#!/usr/bin/python3
"""A K = 5 F2OBO round of a ~100,000-parameter MLP: through the service
(an oracle session answered by f2obo.torch) vs hand-written in PyTorch in
one process (the speed goal: service <= 1.5 x hand).

Model: MLP 784-128-10 (tanh), 101,770 parameters (y), float64; x = one
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

prints milliseconds per round (median of --rounds after 3 warm-up rounds,
the three versions run in turn round by round)
and the ratio, and with --profile where the service side's time goes.
"""
import argparse
import cProfile
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
D, HIDDEN, C, ROWS = 784, 128, 10, 64


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(D, HIDDEN), torch.nn.Tanh(),
                               torch.nn.Linear(HIDDEN, C)).double()


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
    return [tuple((torch.rand(ROWS, D, generator=g, dtype=torch.float64),
                   torch.randint(0, C, (ROWS,), generator=g)) for _ in range(2))
            for _ in range(n)]


# ---- hand-written, one process ------------------------------------------------

class Hand:
    def __init__(self):
        self.model = mlp()
        self.names = [n for n, _ in self.model.named_parameters()]
        self.shapes = [p.shape for _, p in self.model.named_parameters()]
        self.sizes = [p.numel() for _, p in self.model.named_parameters()]
        self.y = torch.cat([p.detach().reshape(-1) for p in self.model.parameters()])
        self.z = self.y.clone()
        self.x = torch.full((2,), 1e-3, dtype=torch.float64)
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

def start_server(binary, durability):
    data = tempfile.mkdtemp(prefix="f2obo-bench-")
    proc = subprocess.Popen([binary, "--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
                             "--data_dir=" + data, "--durability=" + durability],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    m = re.search(r"listening on [^ ]+:(\d+)", proc.stdout.readline())
    if not m:
        proc.kill()
        raise SystemExit("%s did not start" % binary)
    return proc, data, "127.0.0.1:" + m.group(1)


def time_interleaved(fns, steps, rounds, warmup=3):
    """Median ms per round of each of `fns`, run in turn round by round, so
    that the other load of a shared machine falls on all of them alike."""
    for i in range(warmup):
        for fn in fns:
            fn(steps[i % len(steps)])
    times = [[] for _ in fns]
    for i in range(rounds):
        for fn, out in zip(fns, times):
            start = time.perf_counter()
            fn(steps[i % len(steps)])
            out.append(time.perf_counter() - start)
    return [1e3 * statistics.median(t) for t in times]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("server_binary")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--durability", default="none")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    steps = ring()
    hand = Hand()
    n_params = hand.y.numel()

    proc, data, address = start_server(a.server_binary, a.durability)
    try:
        client = f2obo.Client(address)
        tuners = [f2obo.torch.Tuner(
            client, mlp(), {"wd": f2obo.torch.Hyperparameter(
                torch.full((2,), 1e-3, dtype=torch.float64), box=(0.0, 0.01))},
            g_loss, f_loss, algorithm="f2obo", inner_steps=K, alpha=ALPHA, beta=BETA,
            gamma=GAMMA, lambda1=LAMBDA1, tau=TAU, sync_every=sync_every)
            for sync_every in (1, 0)]
        hand_ms, synced, unsynced = time_interleaved(
            [hand.round] + [lambda s, t=t: t.step(*s) for t in tuners], steps, a.rounds)
        if a.profile:
            prof = cProfile.Profile()
            prof.enable()
            for i in range(10):
                tuners[0].step(*steps[i % len(steps)])
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(18)
        for t in tuners:
            t.close()
        client.close()
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(data, ignore_errors=True)
    results = {1: synced, 0: unsynced}
    print("MLP %d-%d-%d: %d parameters, %d-row batches, K = %d, float64, torch %s, "
          "threads %d, server --durability=%s"
          % (D, HIDDEN, C, n_params, ROWS, K, torch.__version__, torch.get_num_threads(),
             a.durability))
    print("%-42s %10s %8s" % ("round", "ms", "x hand"))
    print("%-42s %10.2f %8.2f" % ("hand-written PyTorch, one process", hand_ms, 1.0))
    print("%-42s %10.2f %8.2f" % ("service, weights synced every step", results[1],
                                  results[1] / hand_ms))
    print("%-42s %10.2f %8.2f" % ("service, weights synced on demand", results[0],
                                  results[0] / hand_ms))


if __name__ == "__main__":
    main()
