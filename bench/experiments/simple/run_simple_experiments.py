#!/usr/bin/python3
"""The simple bilevel papers' experiments, reproduced through f2obo-server.

Starts its own f2obo-server (in memory, loopback, a free port) and drives it
with the Python client (client/python, installed into <build>/python by the
f2obo_python target) over gRPC.  Every comparison is one side-by-side group
(CreateGroup / StepsGroup): the members see exactly the same batches.

Experiments (bench/EXPERIMENTS.md, section "Simple bilevel", has the
settings, the figures and the deviations):
  linear_inverse  AGM-BiO paper (Cao et al.) Sec. 5 / App. D.2 / Fig. 2:
                  f = (1/2)||x||^2, g = (1/2)(1^T x - 1)^2, n = 3 and 100,
                  K = 1000 steps, one inner row (1^T, 1) per step, no upper
                  rows.  Groups: agm_bio on Z = R^n_+ from a random x_0 (the
                  paper) and from x_0 = 0 (the unit test), and agm_bio,
                  ir_scg, ir_fscg side by side on the box [0, 1]^n.
  regression      Over-parameterized regression (both papers): scikit-learn's
                  bundled diabetes data, degree-2 polynomial features (d = 65),
                  32 training rows (inner, g) and 128 validation rows
                  (upper, f), Z = the l1 ball of radius 2 x the least l1 norm
                  of an interpolating x; ir_scg, ir_fscg, agm_bio side by side.

Reference values are exact: f* = 1/(2n), g* = 0 (linear inverse);
g* = 0 (the ball holds interpolating points) and f* from a certified solve
of the constrained bilevel problem (regression; see exact_regression_fstar).
The gaps of every served decision x_k are computed here from the whole data
(every step); the server's own metrics (SimpleMetricsEvaluator on its
2048-row windows) are recorded beside them every `exact_every` steps.

Writes into --out (default: results/ next to this script):
  <exp>_<group>_<member>.csv   per decision index k (thinned to a log grid,
                               every server-metric step kept)
  <exp>_summary.csv            final figures of every member
  regression_reference.txt     the data split, delta, f* and its certificate
  commands.log                 what was run (groups, members, options)
Needs Debian's python3 with numpy, scipy and scikit-learn.
"""
import argparse
import csv
import math
import os
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


class Server:
    """f2obo-server on 127.0.0.1 with a free port; the banner names it."""

    def __init__(self, build, workdir, nice):
        self.log = open(os.path.join(workdir, "server.err"), "w")
        self.proc = subprocess.Popen(
            ["nice", "-n", str(nice), f"{build}/server/f2obo-server", "--listen=127.0.0.1:0",
             "--metrics_listen=127.0.0.1:0", "--data_dir=", "--durability=none",
             "--max_pending_metrics=100000", "--metrics_threads=1"],
            stdout=subprocess.PIPE, stderr=self.log, text=True)
        banner = self.proc.stdout.readline()  # blocks until the server listens
        if "listening on" not in banner:
            raise RuntimeError(f"f2obo-server did not start: {banner!r}")
        self.target = banner.split("listening on ")[1].split(",")[0].strip()
        # "..., metrics on HOST:PORT/metrics": the Prometheus endpoint.
        self.metrics_target = banner.split("metrics on ")[1].split("/metrics")[0].strip()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)
        self.log.close()


class Watcher(threading.Thread):
    """Collects one member's server-side exact metrics during the stream (the
    server buffers only a session's last 1024 per-step messages)."""

    def __init__(self, session, until):
        super().__init__(daemon=True)
        self.session, self.until, self.rows, self.error = session, until, {}, None

    def run(self):
        try:
            for m in self.session.metrics(until_t=self.until):
                if m.exact is not None and m.exact.proto.HasField("simple"):
                    s = m.exact.simple
                    # Step t's metrics measure the decision served before
                    # step t, i.e. x_{t-1} (t - 1 steps applied).
                    self.rows[m.t - 1] = {
                        "srv_f": s.f, "srv_g": s.g, "srv_g_star": s.g_star,
                        "srv_inner_gap": s.inner_gap,
                        "srv_fw_gap": s.fw_gap if s.proto.HasField("fw_gap") else "",
                        "srv_f_star": s.f_star if s.proto.HasField("f_star") else "",
                        "srv_outer_gap": s.outer_gap if s.proto.HasField("outer_gap") else "",
                        "srv_converged": int(s.g_star_converged)}
        except Exception as e:  # reported by the caller
            self.error = e


def log_grid(k_max, points=400):
    """Decision indices kept in the CSVs: 0..50 and a log grid up to k_max."""
    keep = set(range(min(k_max, 50) + 1))
    keep.update(int(round(v)) for v in np.geomspace(1, k_max, points))
    keep.add(k_max)
    return keep


def run_group(client, log, gid, members, spec, steps, metrics_every, measure, out_prefix):
    """One group: stream `steps`, measure every decision, save one CSV per
    member.  `steps` is an iterable of (upper, inner) pairs; measure(x) ->
    dict of exact figures of decision x.  Returns {member: final row}."""
    shown = {k: (np.array2string(v, threshold=6, precision=4) if isinstance(v, np.ndarray)
                 else v) for k, v in spec.items()}
    log.write(f"create_group {gid}: spec {shown}; members {members}\n")
    log.flush()
    group = client.create_group(gid, members=members, **spec)
    names = list(members)
    sessions = group.sessions
    total = len(steps)
    watchers = {n: Watcher(sessions[n], total) for n in names}
    for w in watchers.values():
        w.start()
    x0 = np.array(sessions[names[0]].decision().x)  # x_0, served before step 1
    rows = {n: [dict(k=0, seconds=0.0, oracle_seconds=0.0, alpha="", sigma="", g_level="",
                     **measure(x0))] for n in names}
    secs = {n: 0.0 for n in names}
    oracle = {n: 0.0 for n in names}
    t0 = time.time()
    for r in group.stream(iter(steps)):
        for n in names:
            reply = r[n]
            secs[n] += reply.report.round_seconds
            oracle[n] += reply.report.simple.oracle_seconds
            sr = reply.report.simple
            rows[n].append(dict(k=reply.t, seconds=secs[n], oracle_seconds=oracle[n],
                                alpha=sr.alpha, sigma=sr.sigma, g_level=sr.g_level,
                                **measure(np.asarray(reply.x))))
    wall = time.time() - t0
    for w in watchers.values():
        w.join(timeout=600)
    finals = {}
    for n in names:
        w = watchers[n]
        if w.error is not None or w.is_alive():
            raise RuntimeError(f"{gid}.{n}: metrics watch failed: {w.error}")
        keep = log_grid(total) | set(w.rows)
        path = f"{out_prefix}_{n}.csv"
        srv_cols = ["srv_f", "srv_g", "srv_g_star", "srv_inner_gap", "srv_fw_gap",
                    "srv_f_star", "srv_outer_gap", "srv_converged"]
        with open(path, "w", newline="") as fh:
            wr = csv.writer(fh)
            cols = list(rows[n][0].keys())
            wr.writerow(cols + srv_cols)
            for row in rows[n]:
                if row["k"] not in keep:
                    continue
                srv = w.rows.get(row["k"], {})
                wr.writerow([fmt(row[c]) for c in cols] + [fmt(srv.get(c, "")) for c in srv_cols])
        finals[n] = dict(rows[n][-1], server_metric_steps=len(w.rows))
        # The server's last metrics (of x_{T-1}) against ours of the same x.
        last = max(w.rows) if w.rows else None
        if last is not None:
            finals[n]["srv_k"] = last
            finals[n].update({c: w.rows[last][c] for c in (
                "srv_inner_gap", "srv_fw_gap", "srv_outer_gap", "srv_g_star")})
            finals[n]["ours_at_srv_k"] = rows[n][last]
    log.write(f"  {total} steps in {wall:.1f} s wall; round seconds "
              + ", ".join(f"{n} {secs[n]:.3f}" for n in names) + "\n")
    log.flush()
    group.delete()
    return finals, wall


def fmt(v):
    if isinstance(v, float):
        return f"{v:.10g}"
    return v


# ----------------------------------------------------------- linear inverse

def linear_inverse(client, log, out, args):
    summary = []
    K = args.li_steps
    for n in (3, 100):
        f_star = 1.0 / (2 * n)

        def measure(x, n=n):
            f, r = 0.5 * float(x @ x), float(x.sum()) - 1.0
            return {"f": f, "g": 0.5 * r * r, "abs_f_gap": abs(f - f_star), "g_gap": 0.5 * r * r}

        steps = [{"inner": (np.ones((1, n)), np.ones(1))} for _ in range(K)]
        rng = np.random.default_rng(args.seed)
        x_rand = rng.uniform(0.0, 1.0, n)  # the paper: a random point of R^n_+
        common = dict(family="linear_inverse", features=n, problem_class="simple_bilevel",
                      exact_every=args.li_exact_every, seed=args.seed)
        orthant = dict(box=([0.0], [math.inf]))
        unit_box = dict(box=([0.0], [1.0]))
        # agm_bio and ir_fscg: a window of one row is the paper's g (every
        # row of the stream is the same row of B).
        agm = {"algorithm": "agm_bio", "window_rows": 1}
        groups = [
            (f"li{n}_orthant", {"agm_bio": agm}, dict(common, **orthant, x0=x_rand)),
            (f"li{n}_orthant_x0zero", {"agm_bio": agm}, dict(common, **orthant, x0=np.zeros(n))),
            (f"li{n}_box", {"agm_bio": agm, "ir_scg": "ir_scg",
                            "ir_fscg": {"algorithm": "ir_fscg", "window_rows": 1}},
             dict(common, **unit_box, x0=x_rand)),
        ]
        for gid, members, spec in groups:
            finals, wall = run_group(client, log, gid, members, spec, steps,
                                     args.li_exact_every, measure,
                                     os.path.join(out, f"linear_inverse_{gid}"))
            for name, f in finals.items():
                summary.append(dict(n=n, group=gid, member=name, K=K, wall_s=wall, **f))
            print(f"[linear_inverse] {gid}: " + "; ".join(
                f"{m} |f-f*| {f['abs_f_gap']:.3g} g-g* {f['g_gap']:.3g}"
                for m, f in finals.items()), flush=True)
    write_summary(os.path.join(out, "linear_inverse_summary.csv"), summary)


# --------------------------------------------------------------- regression

def regression_data(seed):
    """Diabetes (442 x 10, scikit-learn's bundled copy), degree-2 polynomial
    features (d = 65), every column and the target standardized over all
    rows; a seeded permutation gives 32 training, 128 validation and 282
    test rows."""
    from sklearn.datasets import load_diabetes
    from sklearn.preprocessing import PolynomialFeatures
    X, y = load_diabetes(return_X_y=True)
    P = PolynomialFeatures(2, include_bias=False).fit_transform(X)
    A = (P - P.mean(0)) / P.std(0)
    b = (y - y.mean()) / y.std()
    perm = np.random.default_rng(seed).permutation(len(y))
    tr, va, te = perm[:32], perm[32:160], perm[160:]
    return A[tr], b[tr], A[va], b[va], A[te], b[te]


def exact_regression_fstar(Au, bu, Ai, bi, delta_factor):
    """delta, f*, x* and a KKT certificate for
        min (1/2m)||Au x - bu||^2  s.t.  Ai x = bi,  ||x||_1 <= delta,
    which is the bilevel problem when delta >= rho_min (the least l1 norm of
    an interpolating x, an LP): then min_Z g = 0 and argmin_Z g = {Ai x =
    bi} ∩ Z.  SLSQP on x = u - v (u, v >= 0) finds the support and signs;
    the equality-constrained QP on that face is then solved exactly (its KKT
    system) and the KKT conditions of the full problem are checked."""
    from scipy.optimize import linprog, minimize
    d, m = Au.shape[1], len(bu)
    lp = linprog(np.ones(2 * d), A_eq=np.hstack([Ai, -Ai]), b_eq=bi, bounds=(0, None),
                 method="highs")
    rho_min = lp.fun
    delta = delta_factor * rho_min
    H, c = Au.T @ Au / m, Au.T @ bu / m

    def fobj(w):
        x = w[:d] - w[d:]
        r = Au @ x - bu
        gx = Au.T @ r / m
        return 0.5 * r @ r / m, np.concatenate([gx, -gx])

    cons = [{"type": "eq", "fun": lambda w: Ai @ (w[:d] - w[d:]) - bi,
             "jac": lambda w: np.hstack([Ai, -Ai])},
            {"type": "ineq", "fun": lambda w: delta - w.sum(), "jac": lambda w: -np.ones(2 * d)}]
    res = minimize(fobj, lp.x, jac=True, method="SLSQP", bounds=[(0, None)] * (2 * d),
                   constraints=cons, options={"maxiter": 2000, "ftol": 1e-15})
    x = res.x[:d] - res.x[d:]
    # The face: support S, signs s, ||x||_1 = delta active (lambda >= 0).
    S = np.nonzero(np.abs(x) > 1e-7)[0]
    s = np.sign(x[S])
    k, n = len(S), len(bi)
    K = np.zeros((k + n + 1, k + n + 1))
    K[:k, :k] = H[np.ix_(S, S)]
    K[:k, k:k + n] = Ai[:, S].T
    K[:k, -1] = s
    K[k:k + n, :k] = Ai[:, S]
    K[-1, :k] = s
    sol = np.linalg.lstsq(K, np.concatenate([c[S], bi, [delta]]), rcond=None)[0]
    xs = np.zeros(d)
    xs[S] = sol[:k]
    y, lam = sol[k:k + n], sol[-1]
    grad = H @ xs - c + Ai.T @ y  # + lam * subgradient of ||.||_1 must vanish
    off = np.setdiff1d(np.arange(d), S)
    cert = {
        "lambda": lam,
        "signs_kept": bool(np.all(np.sign(xs[S]) == s)),
        "stationarity_on_support": float(np.abs(grad[S] + lam * s).max()),
        "max_offsupport_grad": float(np.abs(grad[off]).max()) if off.size else 0.0,
        "equality_residual": float(np.abs(Ai @ xs - bi).max()),
        "l1_minus_delta": float(np.abs(xs).sum() - delta),
    }
    cert["optimal"] = bool(lam >= 0 and cert["signs_kept"]
                           and cert["max_offsupport_grad"] <= lam + 1e-9
                           and cert["stationarity_on_support"] < 1e-9
                           and cert["equality_residual"] < 1e-9
                           and abs(cert["l1_minus_delta"]) < 1e-9)
    f_star = 0.5 * float(np.mean((Au @ xs - bu) ** 2))
    return dict(rho_min=rho_min, delta=delta, f_star=f_star, x_star=xs, slsqp_f=res.fun,
                support=k, cert=cert)


def cyclic_steps(A, b, per_step, steps):
    """Row blocks of per_step rows, cycling through (A, b) in order."""
    n = len(b)
    assert n % per_step == 0
    blocks = n // per_step
    return [(A[(t % blocks) * per_step:(t % blocks + 1) * per_step],
             b[(t % blocks) * per_step:(t % blocks + 1) * per_step]) for t in range(steps)]


def regression(client, log, out, args):
    At, bt, Av, bv, Ae, be = regression_data(args.seed)
    ref = exact_regression_fstar(Av, bv, At, bt, args.delta_factor)
    if not ref["cert"]["optimal"]:
        raise RuntimeError(f"the f* solve is not certified optimal: {ref['cert']}")
    f_star, delta = ref["f_star"], ref["delta"]
    with open(os.path.join(out, "regression_reference.txt"), "w") as fh:
        fh.write(f"data: diabetes, degree-2 polynomial features, d = {At.shape[1]}; "
                 f"{len(bt)} training (inner), {len(bv)} validation (upper), "
                 f"{len(be)} test rows; split seed {args.seed}\n")
        fh.write(f"rho_min (least l1 norm of an interpolating x) = {ref['rho_min']:.12g}\n")
        fh.write(f"delta = {args.delta_factor} * rho_min = {delta:.12g}\n")
        fh.write(f"g* = 0 (exact: the l1 ball holds interpolating points)\n")
        fh.write(f"f* = {f_star!r} (SLSQP {ref['slsqp_f']!r}); support {ref['support']} of "
                 f"{At.shape[1]}\n")
        fh.write(f"KKT certificate: {ref['cert']}\n")
        fh.write(f"f(0) = {0.5 * np.mean(bv ** 2):.6g}, g(0) = {0.5 * np.mean(bt ** 2):.6g}; "
                 f"test loss of x*: {0.5 * np.mean((Ae @ ref['x_star'] - be) ** 2):.6g}\n")
    print(f"[regression] delta = {delta:.6g}, f* = {f_star:.12g} (certified)", flush=True)

    def measure(x):
        f = 0.5 * float(np.mean((Av @ x - bv) ** 2))
        g = 0.5 * float(np.mean((At @ x - bt) ** 2))
        return {"f": f, "g": g, "inner_gap": g, "outer_gap": f - f_star,
                "abs_outer_gap": abs(f - f_star), "l1_norm": float(np.abs(x).sum()),
                "test_loss": 0.5 * float(np.mean((Ae @ x - be) ** 2))}

    T = args.reg_steps
    up = cyclic_steps(Av, bv, args.upper_per_step, T)
    inn = cyclic_steps(At, bt, args.inner_per_step, T)
    steps = [{"upper": u, "inner": i} for u, i in zip(up, inn)]
    w = args.reg_window
    members = {
        "ir_scg": "ir_scg",
        "ir_fscg": {"algorithm": "ir_fscg", "window_rows": w},
        "agm_bio": {"algorithm": "agm_bio", "window_rows": w, "agm_gamma": args.agm_gamma},
        # The papers' varsigma = 10 weighs f as much as g for thousands of
        # steps at this data's scale (f, g ~ 0.5); the same with 0.1.
        "ir_scg_s01": {"algorithm": "ir_scg", "reg_scale": 0.1},
        "ir_fscg_s01": {"algorithm": "ir_fscg", "window_rows": w, "reg_scale": 0.1},
    }
    spec = dict(family="least_squares", features=At.shape[1], problem_class="simple_bilevel",
                l1_ball={"radius": delta}, exact_every=args.reg_exact_every, seed=args.seed)
    finals, wall = run_group(client, log, "reg", members, spec, steps, args.reg_exact_every,
                             measure, os.path.join(out, "regression_reg"))
    summary = [dict(group="reg", member=n, T=T, wall_s=wall, f_star=f_star, delta=delta, **f)
               for n, f in finals.items()]
    write_summary(os.path.join(out, "regression_summary.csv"), summary)
    for n, f in finals.items():
        print(f"[regression] {n}: inner gap {f['inner_gap']:.3g}, |outer gap| "
              f"{f['abs_outer_gap']:.3g}, {f['seconds']:.3f} s of rounds", flush=True)


def write_summary(path, rows):
    keys = []
    for r in rows:
        for k in r:
            if k not in keys and k != "ours_at_srv_k":
                keys.append(k)
    keys += ["ours_inner_gap_at_srv_k", "ours_outer_gap_at_srv_k"]
    with open(path, "w", newline="") as fh:
        wr = csv.writer(fh)
        wr.writerow(keys)
        for r in rows:
            ours = r.get("ours_at_srv_k", {})
            r = dict(r)
            r["ours_inner_gap_at_srv_k"] = ours.get("inner_gap", ours.get("g_gap", ""))
            r["ours_outer_gap_at_srv_k"] = ours.get("outer_gap", ours.get("abs_f_gap", ""))
            wr.writerow([fmt(r.get(k, "")) for k in keys])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--build", default=os.environ.get("F2OBO_BUILD",
                                                     os.path.join(HERE, "../../../build")),
                   help="CMake build directory (server/f2obo-server and python/, the "
                        "f2obo_python target)")
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    p.add_argument("--experiments", default="linear_inverse,regression")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--li_steps", type=int, default=1000, help="K (the paper's 1000)")
    p.add_argument("--li_exact_every", type=int, default=10)
    p.add_argument("--reg_steps", type=int, default=16384)
    p.add_argument("--reg_exact_every", type=int, default=64,
                   help="a multiple of the 8-step data cycle, so the server's windows hold "
                        "whole copies of both data sets")
    p.add_argument("--inner_per_step", type=int, default=4)
    p.add_argument("--upper_per_step", type=int, default=16)
    p.add_argument("--reg_window", type=int, default=128,
                   help="window_rows of ir_fscg and agm_bio (128: 4 copies of the training "
                        "rows, the 128 validation rows once)")
    p.add_argument("--agm_gamma", type=float, default=0.01,
                   help="AGM-BiO's gamma on the regression (its App. D.1: 1e-2)")
    p.add_argument("--delta_factor", type=float, default=2.0)
    p.add_argument("--nice", type=int, default=10)
    args = p.parse_args()
    build = os.path.abspath(args.build)
    sys.path.insert(0, os.path.join(build, "python"))
    global f2obo
    import f2obo  # noqa: E402  (the package the f2obo_python target installs)
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="f2obo_simple_exp_")
    log = open(os.path.join(args.out, "commands.log"), "a")
    log.write(f"# {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}: "
              f"{' '.join(sys.argv)}\n")
    server = Server(build, work, args.nice)
    try:
        client = f2obo.Client(server.target)
        client.wait_ready()
        for exp in args.experiments.split(","):
            t0 = time.time()
            {"linear_inverse": linear_inverse, "regression": regression}[exp](
                client, log, args.out, args)
            print(f"[{exp}] done in {time.time() - t0:.0f} s", flush=True)
    finally:
        server.stop()
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
