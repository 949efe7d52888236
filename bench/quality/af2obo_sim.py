"""A numpy transcription of logistic_hpo's F2OBO and AF2OBO rounds
(core/bilevel/hypergradients/first_order.cc, core/bilevel/algorithms/af2obo.cc,
with the automatic steps and the family's curvature bound) on the quality
suite's digits_l2 stream, to try AF2OBO's tolerance schedules without a
rebuild (bench/EXPERIMENTS.md, "Defaults that work on real
streams", section 10).  It reproduces the server's f2obo run (held-out CE
1.000, accuracy 0.767 after 300 steps, seed 1).

    /usr/bin/python3 bench/quality/af2obo_sim.py --algo f2obo             # the check
    /usr/bin/python3 bench/quality/af2obo_sim.py --steps 100 --every 10   # old defaults: delta_y 0.5
    /usr/bin/python3 bench/quality/af2obo_sim.py --steps 100 --lockstep   # same, loops in lockstep
    /usr/bin/python3 bench/quality/af2obo_sim.py --dy_sched lam           # the defaults now
    /usr/bin/python3 bench/quality/af2obo_sim.py --dy_sched lam --hi 0    # their untuned start

--dy_sched: const (delta_y as given), sqrt (delta_y / sqrt(t)), lam
(delta_y lambda_t / lambda_1 with delta_z = delta_y / lambda_1: at the
default delta_y = 0.5, lambda_1 = 5 the server's 0.1 lambda_t and 0.1).
Without --dy_sched lam, delta_z defaults to the former delta_y lambda_1 /
lambda_t.  Prints held-out CE / accuracy, mean penalties, the last
round's loop counts, max |h| and cap hits every --every steps.
"""
import argparse
import os
import sys
import time

import numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from task_bilevel import digits_l2_data
C = 10
MU0 = 1e-3

def softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z); return e / e.sum(axis=1, keepdims=True)

def ce_grad(Y, A, l):
    """Y (d+1) x C: rows W then b. mean CE and its gradient."""
    p = softmax(A @ Y[:-1] + Y[-1])
    n = len(l)
    loss = -np.log(p[np.arange(n), l] + 1e-300).mean()
    r = p.copy(); r[np.arange(n), l] -= 1; r /= n
    g = np.vstack([A.T @ r, r.sum(0)])
    return loss, g, p

def g_grad(x, Y, A, l):
    loss, g, p = ce_grad(Y, A, l)
    g = g + MU0 * Y
    g[:-1] += x[:, None] * Y[:-1]
    return g

def curv_bound(Y, A, l):
    p = softmax(A @ Y[:-1] + Y[-1])
    w = np.minimum(p.max(1), (2 * p * (1 - p)).max(1))
    return (w * ((A * A).sum(1) + 1)).sum() / len(l)

def run(args):
    (a_tr, l_tr), (a_va, l_va), (a_te, l_te) = digits_l2_data(args.seed)
    d = a_tr.shape[1]; per = 32
    x = np.full(d, args.x0); Y = np.zeros((d + 1, C)); Z = np.zeros((d + 1, C))
    lam = args.lambda1
    out = []
    tot_it = 0; t0 = time.time(); caps = 0
    for t in range(1, args.steps + 1):
        i = np.arange((t - 1) * per, t * per)
        Au, lu = a_va[i % len(l_va)], l_va[i % len(l_va)]
        Ai, li = a_tr[i % len(l_tr)], l_tr[i % len(l_tr)]
        lg = curv_bound(Y, Ai, li) + MU0 + max(0, x.max()); lf = curv_bound(Y, Au, lu)
        beta = 1.0 / (args.beta_factor * lam * lg + lf)
        alpha = lam * beta
        if args.algo == "f2obo":
            for k in range(args.K):
                gz = g_grad(x, Z, Ai, li)
                gy = ce_grad(Y, Au, lu)[1] + lam * g_grad(x, Y, Ai, li)
                Z -= alpha * gz; Y -= beta * gy
            kz = ky = args.K
        else:
            dy = {"const": args.delta_y, "sqrt": args.delta_y / np.sqrt(t), "lam": args.delta_y * lam / args.lambda1}[args.dy_sched]
            dz = args.delta_z if args.delta_z > 0 else (dy * args.lambda1 / lam if args.dy_sched != "lam" else args.delta_y / args.lambda1)
            if args.dz_rel: dz = dy / lam
            kz = ky = 0; zd = yd = False
            while not (zd and yd):
                if not zd:
                    gz = g_grad(x, Z, Ai, li)
                    if np.linalg.norm(gz) <= dz or kz == args.cap: zd = True
                if not yd:
                    gy = ce_grad(Y, Au, lu)[1] + lam * g_grad(x, Y, Ai, li)
                    if np.linalg.norm(gy) <= dy or ky == args.cap: yd = True
                if args.lockstep and not (zd and yd) and (kz < args.cap):
                    # both keep going until both tolerances hold
                    zd = yd = False
                    Z -= alpha * gz; kz += 1
                    Y -= beta * gy; ky += 1
                    continue
                if not zd: Z -= alpha * gz; kz += 1
                if not yd: Y -= beta * gy; ky += 1
            if kz >= args.cap or ky >= args.cap: caps += 1
        tot_it += max(kz, ky)
        h = lam * 0.5 * ((Y[:-1] ** 2).sum(1) - (Z[:-1] ** 2).sum(1))
        x = np.clip(x - args.gamma * h, args.lo, args.hi)
        lam = (1 + 1.0 / t) * lam
        if t % args.every == 0 or t == args.steps:
            Yt = Y
            p = softmax(a_te @ Yt[:-1] + Yt[-1])
            ce = -np.log(p[np.arange(len(l_te)), l_te]).mean(); acc = (p.argmax(1) == l_te).mean()
            print("t=%4d CE %.3f acc %.3f  x pix %.4f noise %.4f  at-bound %d  kz %d ky %d  |h| %.3g  it/step %.0f caps %d  %.0fs" % (
                t, ce, acc, x[:64].mean(), x[64:].mean(), (x >= args.hi - 1e-12).sum(), kz, ky,
                np.abs(h).max(), tot_it / t, caps, time.time() - t0), flush=True)

ap = argparse.ArgumentParser()
ap.add_argument("--algo", default="af2obo"); ap.add_argument("--steps", type=int, default=300)
ap.add_argument("--seed", type=int, default=1); ap.add_argument("--K", type=int, default=5)
ap.add_argument("--lambda1", type=float, default=5.0); ap.add_argument("--gamma", type=float, default=1e-3)
ap.add_argument("--delta_y", type=float, default=0.5); ap.add_argument("--delta_z", type=float, default=0.0)
ap.add_argument("--dy_sched", default="const"); ap.add_argument("--dz_rel", action="store_true")
ap.add_argument("--lockstep", action="store_true"); ap.add_argument("--cap", type=int, default=10000)
ap.add_argument("--beta_factor", type=float, default=2.0)
ap.add_argument("--x0", type=float, default=0.0); ap.add_argument("--lo", type=float, default=0.0); ap.add_argument("--hi", type=float, default=0.1)
ap.add_argument("--every", type=int, default=25)
run(ap.parse_args())
