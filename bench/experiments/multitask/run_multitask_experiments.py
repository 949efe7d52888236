#!/usr/bin/python3
"""The RSVRB paper's multi-task HPO experiment (Guo, Hu, Zhang & Yang, App.
E.2), reproduced on offline data through f2obo-server.

Starts its own f2obo-server (in memory, loopback, a free port; the simple
bilevel experiments' Server class) and drives it with the Python client
(client/python, installed into <build>/python by the f2obo_python target).

Problem (family multitask_logistic_hpo, problem class multitask_bilevel):
m = 45 binary tasks, one per pair of digit classes (a, b), a < b, of
scikit-learn's bundled digits (8x8 images pooled to 4x4: 16 pixel features
scaled to [0, 1], then `noise_features` = 16 pure N(0, 1) columns, d = 32).  Task i has n_tr training rows (its inner problem g_i) and n_va
validation rows (its upper problem f_i), and the loss temperature sigma_i
in [1, 11] that the family derives from i (the paper's App. E.2 range).
Shared x: one L2 coefficient per feature, in the box [0, box_hi]^d (the
noise columns are what a good x regularizes away):

  F(x) = (1/m) sum_i CE_sigma_i(val_i; y_i*(x)),
  y_i*(x) = argmin_y CE_sigma_i(train_i; y) + (mu0/2)||y||^2
                     + (1/2) sum_f x_f ||W_f||^2.

Three ways of using the same data, in two side-by-side groups (members of a
group see exactly the same batches):
  sampled   k = 5 of the 45 tasks per step, drawn uniformly without
            replacement (p_i = k/m, the server's default): rsvrb (Alg. 2)
            and mt_f2obo (our first-order multi-task round);
  all       every task every step (k = m, p_i = 1): the paper's baselines
            process all lower problems each iteration; rsvrb (which is then
            SVRB run on every task) and mt_f2obo.
Each task's batch in a step: `batch_rows` training rows and `batch_rows`
validation rows drawn from its sets (seeded).  The all-task stream gets as
many rows in total as the sampled one (fewer, larger steps).

Measured here (not by the server): F(x_t) above, with y_i*(x_t) solved on
the whole training set of each task (L-BFGS, warm-started) and CE on the
whole validation set, and the validation accuracy, at ~40 log-spaced steps
of each run; against the rows the session has read (rows_processed, the
paper's sample complexity) and its cumulative server round time.  The
server's own exact metrics of F over the tasks seen (every
`exact_every` steps, on the tasks' latest batches) and its Prometheus
series (f2obo_multitask_*) at the end are recorded beside them.

Writes into --out (default: results/ next to this script):
  multitask_<stream>_<member>.csv   per measured step
  multitask_summary.csv             final figures of every run
  multitask_metrics_scrape.txt      the f2obo_multitask_* lines of /metrics
  commands.log                      groups, specs, members, wall times
Needs Debian's python3 with numpy, scipy and scikit-learn.
"""
import argparse
import csv
import math
import os
import sys
import tempfile
import threading
import time
import urllib.request

import numpy as np
from scipy.optimize import minimize

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "simple"))
from run_simple_experiments import Server  # noqa: E402

MASK = (1 << 64) - 1


def task_temperature(task, max_temperature):
    """core/multitask/multitask_family.cc's TaskTemperature (SplitMix64)."""
    z = (task + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    z ^= z >> 31
    return 1.0 + (max_temperature - 1.0) * ((z >> 11) * 2.0 ** -53)


PIXELS = 16  # 4x4 pooled digits


def make_tasks(n_tr, n_va, noise_features, seed):
    """The 45 class-pair tasks of digits: [(a, b, Xtr, ytr, Xva, yva)]; the
    4x4 pooled pixels (2x2 sums of the 8x8 images, scaled to [0, 1]) then
    `noise_features` N(0, 1) columns."""
    from sklearn.datasets import load_digits
    X, y = load_digits(return_X_y=True)
    pooled = X.reshape(-1, 4, 2, 4, 2).sum(axis=(2, 4)).reshape(-1, PIXELS) / 64.0
    rng = np.random.default_rng(seed)
    X = np.hstack([pooled, rng.normal(0.0, 1.0, (len(X), noise_features))])
    tasks = []
    for a in range(10):
        for b in range(a + 1, 10):
            idx = np.flatnonzero((y == a) | (y == b))
            idx = rng.permutation(idx)
            tr, va = idx[:n_tr], idx[n_tr:n_tr + n_va]
            tasks.append((a, b, X[tr], (y[tr] == b).astype(np.int32),
                          X[va], (y[va] == b).astype(np.int32)))
    return tasks


class Objective:
    """F(x) and accuracy over all tasks, y_i*(x) on the whole training sets
    (the family's g: binary softmax CE of logits / sigma, mu0 on all of y,
    x_f on the feature rows of W).  y = (W (d x 2, feature-major), b (2))."""

    def __init__(self, tasks, mu0, max_temperature):
        self.tasks, self.mu0 = tasks, mu0
        self.sigma = [task_temperature(i, max_temperature) for i in range(len(tasks))]
        self.d = tasks[0][2].shape[1]
        self.warm = {}

    def _ce(self, A, labels, y, sigma):
        W = y[:2 * self.d].reshape(self.d, 2)
        z = (A @ W + y[2 * self.d:]) / sigma
        zmax = z.max(axis=1, keepdims=True)
        lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
        loss = float(np.mean(lse - z[np.arange(len(labels)), labels]))
        p = np.exp(z - lse[:, None])
        p[np.arange(len(labels)), labels] -= 1.0
        r = p / (sigma * len(labels))
        grad = np.concatenate([(A.T @ r).ravel(), r.sum(axis=0)])
        return loss, grad, z

    def inner_solution(self, i, x, key):
        _, _, Xtr, ytr, _, _ = self.tasks[i]
        sigma = self.sigma[i]
        rowpen = np.repeat(x, 2)

        def g(y):
            loss, grad, _ = self._ce(Xtr, ytr, y, sigma)
            W = y[:2 * self.d]
            loss += 0.5 * self.mu0 * y @ y + 0.5 * float(rowpen @ (W * W))
            grad = grad + self.mu0 * y
            grad[:2 * self.d] += rowpen * W
            return loss, grad

        y0 = self.warm.get((key, i), np.zeros(2 * self.d + 2))
        r = minimize(g, y0, jac=True, method="L-BFGS-B",
                     options={"maxiter": 5000, "gtol": 1e-7, "ftol": 1e-13})
        self.warm[(key, i)] = r.x
        return r.x

    def __call__(self, x, key):
        losses, correct, total = [], 0, 0
        for i, (_, _, _, _, Xva, yva) in enumerate(self.tasks):
            y = self.inner_solution(i, x, key)
            loss, _, z = self._ce(Xva, yva, y, self.sigma[i])
            losses.append(loss)
            correct += int((z.argmax(axis=1) == yva).sum())
            total += len(yva)
        return float(np.mean(losses)), correct / total


def task_batch(task, rng, rows):
    _, _, Xtr, ytr, Xva, yva = task
    tr = rng.choice(len(ytr), size=min(rows, len(ytr)), replace=False)
    va = rng.choice(len(yva), size=min(rows, len(yva)), replace=False)
    return {"upper": (Xva[va], yva[va]), "inner": (Xtr[tr], ytr[tr])}


def stream(tasks, steps, per_step, rows, seed):
    """`steps` step requests of `per_step` uniformly sampled tasks each."""
    rng = np.random.default_rng(seed)
    m = len(tasks)
    for _ in range(steps):
        chosen = np.sort(rng.choice(m, size=per_step, replace=False))
        yield {"tasks": [dict(task=int(i), **task_batch(tasks[i], rng, rows)) for i in chosen]}


class Watcher(threading.Thread):
    """Collects one member's server-side exact metrics of F over the tasks seen."""

    def __init__(self, session, until):
        super().__init__(daemon=True)
        self.session, self.until, self.rows, self.error = session, until, {}, None

    def run(self):
        try:
            for m in self.session.metrics(until_t=self.until):
                if m.exact is not None:
                    e = m.exact.proto
                    self.rows[m.t] = {"srv_F": e.value, "srv_grad_norm": e.true_gradient_norm,
                                      "srv_regret": e.running.blreg,
                                      "srv_tasks_evaluated": e.multitask.tasks_evaluated,
                                      "srv_exact_seconds": e.multitask.seconds}
        except Exception as e:  # reported by the caller
            self.error = e


def measured_steps(total, points=25):
    keep = {0, total}
    keep.update(int(round(v)) for v in np.geomspace(1, total, points))
    return keep


def run_group(client, log, gid, members, spec, requests, total, objective, out, exact_every):
    log.write(f"create_group {gid}: spec {spec}; members {members}; {total} steps\n")
    log.flush()
    group = client.create_group(gid, members=members, **spec)
    names = list(members)
    sessions = group.sessions
    watchers = {n: Watcher(sessions[n], total) for n in names}
    for w in watchers.values():
        w.start()
    keep = measured_steps(total)
    x0 = np.array(sessions[names[0]].decision().x)
    F0, acc0 = objective(x0, (gid, "x0"))
    rows = {n: [dict(t=0, samples=0, rows_read=0, seconds=0.0, F=F0, accuracy=acc0,
                     x_pixels=float(x0[:PIXELS].mean()), x_noise=float(x0[PIXELS:].mean()))]
            for n in names}
    secs = {n: 0.0 for n in names}
    read = {n: 0 for n in names}
    sent = [0]

    def counted(requests):
        for req in requests:
            sent[0] += sum(len(tb["upper"][1]) + len(tb["inner"][1]) for tb in req["tasks"])
            yield req

    t0 = time.time()
    for r in group.stream(counted(requests)):
        for n in names:
            reply = r[n]
            secs[n] += reply.report.round_seconds
            read[n] += reply.report.rows_processed
            if reply.t in keep:
                x = np.asarray(reply.x)
                F, acc = objective(x, (gid, n))
                rows[n].append(dict(t=reply.t, samples=sent[0], rows_read=read[n],
                                    seconds=secs[n], F=F, accuracy=acc,
                                    x_pixels=float(x[:PIXELS].mean()), x_noise=float(x[PIXELS:].mean())))
    wall = time.time() - t0
    finals = {}
    for n in names:
        w = watchers[n]
        w.join(timeout=600)
        if w.error is not None or w.is_alive():
            raise RuntimeError(f"{gid}.{n}: metrics watch failed: {w.error}")
        srv_cols = ["srv_F", "srv_grad_norm", "srv_regret", "srv_tasks_evaluated",
                    "srv_exact_seconds"]
        with open(os.path.join(out, f"multitask_{gid}_{n}.csv"), "w", newline="") as fh:
            wr = csv.writer(fh)
            cols = list(rows[n][0].keys())
            wr.writerow(cols + srv_cols)
            for row in rows[n]:
                # Step t's server metrics are of x_t, the decision before step t.
                srv = w.rows.get(row["t"] + 1, {})
                wr.writerow([fmt(row[c]) for c in cols] + [fmt(srv.get(c, "")) for c in srv_cols])
        last_srv = w.rows[max(w.rows)] if w.rows else {}
        finals[n] = dict(rows[n][-1], stream=gid, member=n, server_metric_steps=len(w.rows),
                         **{k: last_srv.get(k, "") for k in srv_cols})
    log.write(f"  {total} steps in {wall:.1f} s wall; round seconds "
              + ", ".join(f"{n} {secs[n]:.3f}" for n in names) + "\n")
    log.flush()
    return group, finals


def fmt(v):
    return f"{v:.10g}" if isinstance(v, float) else v


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--build", default=os.environ.get("F2OBO_BUILD",
                                                     os.path.join(HERE, "../../../build")))
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--n_tr", type=int, default=20, help="training rows per task")
    p.add_argument("--n_va", type=int, default=100, help="validation rows per task (the paper: 100)")
    p.add_argument("--noise_features", type=int, default=16,
                   help="N(0, 1) columns after the 16 pooled pixels: what the per-feature L2 "
                        "should learn to suppress")
    p.add_argument("--batch_rows", type=int, default=20, help="rows of each kind per task per step")
    p.add_argument("--per_step", type=int, default=5, help="k, tasks per step of the sampled stream")
    p.add_argument("--sampled_steps", type=int, default=600)
    p.add_argument("--exact_every", type=int, default=0,
                   help="the server's exact metrics of F every N steps (0: the streams' "
                        "defaults below)")
    p.add_argument("--box_hi", type=float, default=1.0)
    p.add_argument("--mu0", type=float, default=1e-3)
    p.add_argument("--max_temperature", type=float, default=11.0)
    p.add_argument("--gammas", default="rsvrb:0.001,0.003,0.01;mt_f2obo:0.003,0.01,0.03",
                   help="x step sizes of each algorithm, one member per value, e.g. "
                        "'rsvrb:0.001,0.01;rsvrb/momentum=0.99:0.001;mt_f2obo:0.01' (y steps: "
                        "alpha_auto, beta_auto: 1/L on the task's batch)")
    p.add_argument("--streams", default="sampled,all")
    p.add_argument("--nice", type=int, default=10)
    args = p.parse_args()
    build = os.path.abspath(args.build)
    sys.path.insert(0, os.path.join(build, "python"))
    import f2obo  # noqa: E402  (the package the f2obo_python target installs)
    os.makedirs(args.out, exist_ok=True)
    tasks = make_tasks(args.n_tr, args.n_va, args.noise_features, args.seed)
    m = len(tasks)
    objective = Objective(tasks, args.mu0, args.max_temperature)
    work = tempfile.mkdtemp(prefix="f2obo_mt_exp_")
    log = open(os.path.join(args.out, "commands.log"), "a")
    log.write(f"# {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}: "
              f"{' '.join(sys.argv)}\n")
    server = Server(build, work, args.nice)
    summary = []
    try:
        client = f2obo.Client(server.target)
        client.wait_ready()
        spec = dict(family="multitask_logistic_hpo", problem_class="multitask_bilevel",
                    features=tasks[0][2].shape[1], classes=2, tasks=m,
                    max_temperature=args.max_temperature, mu0=args.mu0,
                    box=([0.0], [args.box_hi]), seed=args.seed, alpha_auto=True)
        members = {}
        for part in args.gammas.split(";"):
            # "rsvrb:0.001,0.01" or "rsvrb/momentum=0.99:0.001" (options for those members)
            head, values = part.split(":")
            algorithm, *opts = head.split("/")
            extra = {"beta_auto": True} if algorithm == "mt_f2obo" else {}
            extra.update((k, float(v)) for k, v in (o.split("=") for o in opts))
            variant = "".join(f"_{k[:3]}{v}" for k, v in (o.split("=") for o in opts))
            for g in values.split(","):
                name = f"{algorithm}{variant}_g{g}".replace(".", "p")
                members[name] = dict(algorithm=algorithm, gamma=float(g), **extra)
        all_steps = math.ceil(args.sampled_steps * args.per_step / m)
        groups = []
        for gid, per_step, steps, every in (
                ("sampled", args.per_step, args.sampled_steps, args.exact_every or 100),
                ("all", m, all_steps, args.exact_every or 10)):
            if gid not in args.streams.split(","):
                continue
            t0 = time.time()
            requests = stream(tasks, steps, per_step, args.batch_rows, args.seed + per_step)
            group, finals = run_group(client, log, gid, members,
                                      dict(spec, exact_every=every), requests, steps,
                                      objective, args.out, every)
            groups.append(group)
            summary += finals.values()
            print(f"[{gid}] {steps} steps of {per_step} tasks: {time.time() - t0:.0f} s; "
                  + ", ".join(f"{n} F={f['F']:.4f} acc={f['accuracy']:.4f} "
                              f"time={f['seconds']:.2f}s"
                              for n, f in finals.items()), flush=True)
        # The server's multi-task Prometheus series of the four sessions.
        with urllib.request.urlopen(f"http://{server.metrics_target}/metrics") as r:
            text = r.read().decode()
        with open(os.path.join(args.out, "multitask_metrics_scrape.txt"), "w") as fh:
            fh.writelines(line + "\n" for line in text.splitlines()
                          if line.startswith("f2obo_multitask_"))
        for g in groups:
            g.delete()
    finally:
        server.stop()
        log.close()
    with open(os.path.join(args.out, "multitask_summary.csv"), "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=list(summary[0].keys()))
        wr.writeheader()
        for row in summary:
            wr.writerow({k: fmt(v) for k, v in row.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
