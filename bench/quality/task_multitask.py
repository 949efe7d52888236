"""The multi-task class's suite task: per-feature L2 HPO over the
45 digits class pairs (the RSVRB paper's App. E.2 setting as reproduced in
EXPERIMENTS.md "Multi-task HPO": 4x4 pooled pixels + 16 N(0, 1) noise
columns, 20 training and 100 validation rows per task, temperatures in
[1, 11]; here the remaining rows of each pair are held out).  A stream of
5 sampled tasks a step (20 + 20 rows each), every option at the server's
default (box [0, 0.1]: the logistic_hpo default).

The score of a hyperparameter x is the held-out F: the mean over tasks of
the test cross-entropy of y_i*(x), each task's model trained to optimality
on its training rows with x (L-BFGS): what a user gets by retraining with
the tuned x.  The untuned start is x = 0; the best fixed hyperparameter in
hindsight is the best uniform x = c of a grid of 12 values (each a full
training of every task; its compute is the client's CPU time of the
solves), Optuna searches c at the CPU time of mt_f2obo's default pass
(the server's), judged on the validation rows.
"""
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "experiments", "multitask"))

from run_multitask_experiments import PIXELS, Objective, task_batch  # noqa: E402
from suite_common import Run, checkpoints, equal_compute_search, server_cpu  # noqa: E402

MAX_TEMPERATURE = 11.0
MU0 = 1e-3


def make_tasks(seed, n_tr=20, n_va=100, noise_features=16):
    """run_multitask_experiments.make_tasks plus each pair's other rows held out."""
    from sklearn.datasets import load_digits
    X, y = load_digits(return_X_y=True)
    pooled = X.reshape(-1, 4, 2, 4, 2).sum(axis=(2, 4)).reshape(-1, PIXELS) / 64.0
    rng = np.random.default_rng(seed)
    X = np.hstack([pooled, rng.normal(0.0, 1.0, (len(X), noise_features))])
    tasks, tests = [], []
    for a in range(10):
        for b in range(a + 1, 10):
            idx = rng.permutation(np.flatnonzero((y == a) | (y == b)))
            tr, va, te = idx[:n_tr], idx[n_tr:n_tr + n_va], idx[n_tr + n_va:]
            tasks.append((a, b, X[tr], (y[tr] == b).astype(np.int32),
                          X[va], (y[va] == b).astype(np.int32)))
            tests.append((X[te], (y[te] == b).astype(np.int32)))
    return tasks, tests


class Scores:
    """Held-out and validation F of x at y_i*(x) (warm-started solves)."""

    def __init__(self, tasks, tests):
        self.obj = Objective(tasks, MU0, MAX_TEMPERATURE)
        self.tasks, self.tests = tasks, tests

    def __call__(self, x, key, rows="test"):
        losses, correct, total = [], 0, 0
        for i in range(len(self.tasks)):
            a, labels = self.tests[i] if rows == "test" else self.tasks[i][4:6]
            y = self.obj.inner_solution(i, np.asarray(x, dtype=float), key)
            loss, _, z = self.obj._ce(a, labels, y, self.obj.sigma[i])
            losses.append(loss)
            correct += int((z.argmax(axis=1) == labels).sum())
            total += len(labels)
        return float(np.mean(losses)), correct / total


def parse_options(text):
    """"KEY=VALUE,KEY=VALUE" -> {KEY: VALUE}: true/false as booleans, else numbers."""
    out = {}
    for item in filter(None, (t.strip() for t in (text or "").split(","))):
        key, value = (v.strip() for v in item.split("=", 1))
        words = {"true": True, "false": False}
        out[key] = words[value.lower()] if value.lower() in words else float(value)
    return out


def multitask_hpo(client, f2obo, args):
    task = "multitask_hpo"
    tasks, tests = make_tasks(args.seed)
    scores = Scores(tasks, tests)
    m, per, steps = len(tasks), 5, args.mt_steps
    d = tasks[0][2].shape[1]
    rng = np.random.default_rng(args.seed + per)
    requests = []
    for _ in range(steps):
        chosen = np.sort(rng.choice(m, size=per, replace=False))
        requests.append([dict(task=int(i), **task_batch(tasks[i], rng, 20)) for i in chosen])
    spec = dict(problem_class="multitask_bilevel", features=d, classes=2, tasks=m,
                max_temperature=MAX_TEMPERATURE, seed=args.seed)
    marks = set(checkpoints(steps))
    runs = []
    rsvrb_options = parse_options(getattr(args, "rsvrb_options", ""))
    for algorithm in ("mt_f2obo", "rsvrb"):
        run = Run(task, "default", algorithm)
        options = rsvrb_options if algorithm == "rsvrb" else {}
        session = client.create_session("multitask_logistic_hpo", algorithm, exact_every=0,
                                        **spec, **options)
        cpu0 = server_cpu()
        try:
            for t, req in enumerate(requests):
                start = time.perf_counter()
                reply = session.step(tasks=req)
                run.seconds += time.perf_counter() - start
                if t + 1 in marks:
                    x = np.asarray(reply.x)
                    run.curve.append((t + 1, *scores(x, algorithm)))
                    run.x = x
        except f2obo.InvalidArgument as e:
            run.error = "refused at step %d: %s" % (t + 1, str(e).splitlines()[0][:120])
        finally:
            run.cpu = server_cpu() - cpu0
            client.delete_session(session.id)
        if run.x is not None:
            run.extra["note"] = "mean x: pixels %.3g, noise %.3g" % (run.x[:PIXELS].mean(),
                                                                     run.x[PIXELS:].mean())
            # F at every checkpoint: whether the run settles or wanders.
            run.extra["note"] += "; F over the run %s" % " ".join(
                "%.2f" % c[1] for c in run.curve)
            if options:
                run.extra["note"] += "; " + ",".join("%s=%s" % kv for kv in options.items())
        runs.append(run)

    def fixed(c, rows="test"):
        r = Run(task, "fixed", "exact y*(x)")
        start, cpu0 = time.perf_counter(), time.process_time()
        x = np.full(d, c)
        r.curve = [(steps, *scores(x, ("fixed", c)))]
        r.val = scores(x, ("fixed", c), rows="validation")[0]
        r.seconds, r.cpu, r.x = time.perf_counter() - start, time.process_time() - cpu0, x
        return r

    untuned = fixed(0.0)
    untuned.method = "untuned"
    runs.append(untuned)
    if not args.search:
        return runs
    grid = [0.0, 1e-4, 3e-4, 1e-3, 2e-3, 3e-3, 5e-3, 0.01, 0.02, 0.03, 0.05, 0.1]
    trials = [(c, fixed(c)) for c in grid]
    c, best = min(trials, key=lambda cr: cr[1].final)
    out = Run(task, "grid", "exact y*(x)", chosen=c, trials=len(grid))
    out.curve, out.x = best.curve, best.x
    out.seconds = sum(r.seconds for _, r in trials)
    out.cpu = sum(r.cpu for _, r in trials)
    out.passes = len(grid)
    runs.append(out)
    budget = next(r.cpu for r in runs if r.algorithm == "mt_f2obo")
    runs.append(equal_compute_search(budget, 1e-4, 0.1, fixed, lambda r: r.val, task,
                                     args.seed))
    return runs
