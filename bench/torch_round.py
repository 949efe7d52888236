#!/usr/bin/python3
"""One F2OBO round (paper Alg. 1) on logistic_hpo in PyTorch, next to ours.

The same round as bench/round_benchmark.cc's BM_Shape (K = 5, fixed step
sizes alpha = 0.1, beta_t = 0.1 / lambda_t, gamma = 0.001, lambda_1 = 5,
tau = 1, mu_0 = 1e-3, X = [0, 0.1]^d), float64, one thread, in two
versions:
  hand:     hand-written softmax gradients, the z- and y-gradients of g from
            one product with [W_z W_y] side by side (our GradYGPair);
  autograd: g and f written as losses, gradients by torch.autograd.grad.
Every round does what ours does: prequential f and accuracy, K inner
iterations (grad_y g at z and y, grad_y f at y), the hypergradient with both
residual norms, the projected x step and the lambda update.

Usage (one command, both sides):
  /usr/bin/python3 bench/torch_round.py build/bench/round_benchmark
runs round_benchmark's BM_Shape/{small,medium}_fixed (Google Benchmark,
JSON) and the PyTorch versions at the same shapes, and prints microseconds
per round and the ratios.  Without the argument only PyTorch runs.
"""
import json
import subprocess
import sys
import time

import torch

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)

SHAPES = {"small": (20, 3, 8), "medium": (100, 10, 32)}  # d, C, rows per batch
K, ALPHA, BETA, GAMMA, LAMBDA1, TAU, MU0 = 5, 0.1, 0.1, 0.001, 5.0, 1.0, 1e-3


def make_ring(d, c, rows, seed, ring=8):
    g = torch.Generator().manual_seed(seed)
    means = 2.0 * torch.randn(c, d, generator=g) / d ** 0.5
    out = []
    for _ in range(ring):
        step = []
        for _ in range(2):  # upper, inner
            labels = torch.randint(0, c, (rows,), generator=g)
            a = means[labels] + torch.randn(rows, d, generator=g)
            step.append((a, labels))
        out.append(step)
    return out


class State:
    def __init__(self, d, c):
        self.x = torch.full((d,), 0.05)
        self.wy = torch.zeros(d, c)
        self.by = torch.zeros(c)
        self.wz = torch.zeros(d, c)
        self.bz = torch.zeros(c)
        self.lam = LAMBDA1
        self.t = 1


# ---- hand-written gradients ------------------------------------------------

def ce_residual(z, labels):
    """(softmax(z) - onehot) / n and the mean cross-entropy."""
    p = torch.softmax(z, dim=1)
    loss = -torch.log(p[torch.arange(len(labels)), labels]).mean()
    p[torch.arange(len(labels)), labels] -= 1.0
    return p / len(labels), loss


def grad_f(w, b, a, labels):
    r, loss = ce_residual(a @ w + b, labels)
    return a.T @ r, r.sum(0), loss


def grad_g_pair(x, w1, b1, w2, b2, a, labels):
    c = w1.shape[1]
    z = a @ torch.cat([w1, w2], 1) + torch.cat([b1, b2])
    r1, _ = ce_residual(z[:, :c], labels)
    r2, _ = ce_residual(z[:, c:], labels)
    g = a.T @ torch.cat([r1, r2], 1)
    reg = MU0 + x[:, None]
    return (g[:, :c] + reg * w1, r1.sum(0) + MU0 * b1,
            g[:, c:] + reg * w2, r2.sum(0) + MU0 * b2)


def round_hand(s, step):
    (au, lu), (ai, li) = step
    zu = au @ s.wy + s.by  # prequential f and accuracy
    _ = torch.nn.functional.cross_entropy(zu, lu).item()
    _ = (zu.argmax(1) == lu).double().mean().item()
    beta = BETA / s.lam
    for _ in range(K):
        gwz, gbz, gwy, gby = grad_g_pair(s.x, s.wz, s.bz, s.wy, s.by, ai, li)
        fw, fb, _ = grad_f(s.wy, s.by, au, lu)
        s.wz -= ALPHA * gwz
        s.bz -= ALPHA * gbz
        s.wy -= beta * (fw + s.lam * gwy)
        s.by -= beta * (fb + s.lam * gby)
    fw, fb, _ = grad_f(s.wy, s.by, au, lu)
    gwz, gbz, gwy, gby = grad_g_pair(s.x, s.wz, s.bz, s.wy, s.by, ai, li)
    h = s.lam * 0.5 * ((s.wy ** 2).sum(1) - (s.wz ** 2).sum(1))
    _ = torch.sqrt((fw + s.lam * gwy).square().sum() + (fb + s.lam * gby).square().sum()).item()
    _ = torch.sqrt(gwz.square().sum() + gbz.square().sum()).item()
    s.x = (s.x - GAMMA * h).clamp(0.0, 0.1)
    s.lam *= (1.0 + 1.0 / s.t) ** TAU
    s.t += 1


# ---- autograd ----------------------------------------------------------------

def g_loss(x, w, b, a, labels):
    z = a @ w + b
    return (torch.nn.functional.cross_entropy(z, labels)
            + 0.5 * MU0 * (w.square().sum() + b.square().sum())
            + 0.5 * (x * w.square().sum(1)).sum())


def f_loss(w, b, a, labels):
    return torch.nn.functional.cross_entropy(a @ w + b, labels)


def round_autograd(s, step):
    (au, lu), (ai, li) = step
    with torch.no_grad():
        zu = au @ s.wy + s.by
        _ = torch.nn.functional.cross_entropy(zu, lu).item()
        _ = (zu.argmax(1) == lu).double().mean().item()
    beta = BETA / s.lam
    wz, bz = s.wz.clone().requires_grad_(), s.bz.clone().requires_grad_()
    wy, by = s.wy.clone().requires_grad_(), s.by.clone().requires_grad_()
    for _ in range(K):
        gwz, gbz = torch.autograd.grad(g_loss(s.x, wz, bz, ai, li), (wz, bz))
        lag = f_loss(wy, by, au, lu) + s.lam * g_loss(s.x, wy, by, ai, li)
        gwy, gby = torch.autograd.grad(lag, (wy, by))
        with torch.no_grad():
            wz -= ALPHA * gwz
            bz -= ALPHA * gbz
            wy -= beta * gwy
            by -= beta * gby
    x = s.x.clone().requires_grad_()
    lag = f_loss(wy, by, au, lu) + s.lam * g_loss(x, wy, by, ai, li)
    gx_y, gwy, gby = torch.autograd.grad(lag, (x, wy, by))
    gz = g_loss(x, wz, bz, ai, li)
    gx_z, gwz, gbz = torch.autograd.grad(gz, (x, wz, bz))
    with torch.no_grad():
        h = gx_y - s.lam * gx_z
        _ = torch.sqrt(gwy.square().sum() + gby.square().sum()).item()
        _ = torch.sqrt(gwz.square().sum() + gbz.square().sum()).item()
        s.x = (s.x - GAMMA * h).clamp(0.0, 0.1)
        s.wz, s.bz, s.wy, s.by = wz.detach(), bz.detach(), wy.detach(), by.detach()
    s.lam *= (1.0 + 1.0 / s.t) ** TAU
    s.t += 1


def time_rounds(fn, d, c, rows, seconds=2.0, repeats=3):
    ring = make_ring(d, c, rows, seed=d + rows)
    best = []
    for _ in range(repeats):
        s = State(d, c)
        for step in ring:  # warm-up
            fn(s, step)
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds / repeats:
            fn(s, ring[n % len(ring)])
            n += 1
        best.append((time.perf_counter() - start) / n)
    best.sort()
    return 1e6 * best[len(best) // 2]  # median, microseconds


def ours(binary):
    out = subprocess.run(
        [binary, "--benchmark_filter=BM_Shape/(small|medium)_fixed", "--benchmark_format=json",
         "--benchmark_min_time=1", "--benchmark_repetitions=3",
         "--benchmark_report_aggregates_only=true"],
        check=True, capture_output=True, text=True).stdout
    times = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            unit = {"us": 1.0, "ms": 1e3, "ns": 1e-3}[b["time_unit"]]
            times[b["run_name"].split("/")[1].split("_")[0]] = b["real_time"] * unit
    return times


def main():
    cpp = ours(sys.argv[1]) if len(sys.argv) > 1 else {}
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, float64")
    print(f"{'shape':8} {'f2obo (C++) us':>15} {'torch hand us':>14} {'torch autograd us':>18}"
          f" {'hand/ours':>10} {'autograd/ours':>14}")
    for name, (d, c, rows) in SHAPES.items():
        hand = time_rounds(round_hand, d, c, rows)
        auto = time_rounds(round_autograd, d, c, rows)
        mine = cpp.get(name)
        ratio = (lambda v: f"{v / mine:10.1f}x") if mine else (lambda v: f"{'-':>10}")
        print(f"{name:8} {mine if mine else float('nan'):15.1f} {hand:14.1f} {auto:18.1f}"
              f" {ratio(hand)} {ratio(auto):>14}")


if __name__ == "__main__":
    main()
