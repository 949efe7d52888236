"""What every task of the quality suite shares: the server, the
runs of one session over a stream with held-out checkpoints, the search
baselines (a grid, Optuna at equal compute) and the result records.

A *run* is one session over one stream; its record holds the held-out
loss / accuracy at checkpoints (the model the session serves then), the
final x, the wall time of its steps (client + server, scoring excluded),
the server's CPU time over the run (its compute: on a shared machine the
wall time is mostly other processes' load) and how many passes over the
stream it made (1 for a session; a search counts its trials' passes).
Sessions run with exact_every = 0: the server's exact metrics would
otherwise run beside every step and be counted as the run's compute.
"""
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "experiments", "simple"))

from run_simple_experiments import Server  # noqa: E402,F401  (re-exported)


SERVER_PID = None  # the suite's server process (set by run_quality_suite.main)


def server_cpu():
    """CPU seconds (user + system, every thread) the server process has
    used so far; 0 when no server is known."""
    if SERVER_PID is None:
        return 0.0
    with open("/proc/%d/stat" % SERVER_PID) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def checkpoints(steps, points=8):
    """`points` step counts spread evenly over the stream, the last = steps."""
    return sorted({max(1, round(steps * (k + 1) / points)) for k in range(points)})


class Run:
    """The record of one run (or of a search's chosen result)."""

    def __init__(self, task, method, algorithm, **extra):
        self.task, self.method, self.algorithm = task, method, algorithm
        self.curve = []  # (step, held-out loss, accuracy or None)
        self.seconds = 0.0
        self.cpu = 0.0  # server CPU seconds (client CPU for client-side solves)
        self.passes = 1.0
        self.x = None
        self.error = None
        self.extra = extra

    @property
    def final(self):
        return self.curve[-1][1] if self.curve else float("nan")

    @property
    def final_acc(self):
        return self.curve[-1][2] if self.curve else None

    def row(self):
        return dict(task=self.task, method=self.method, algorithm=self.algorithm,
                    loss=self.final, acc=self.final_acc, seconds=self.seconds,
                    cpu=self.cpu, passes=self.passes, error=self.error, **self.extra)


def run_session(client, f2obo, task, method, algorithm, spec, steps, batch_at, score,
                points=8):
    """One session over `steps` steps of `batch_at(t) -> (upper, inner)`,
    scored by `score(decision) -> (loss, acc)` at the checkpoints.  A refused
    step ends the run with its error recorded (the curve so far is kept)."""
    run = Run(task, method, algorithm)
    session = client.create_session(spec["family"], algorithm, exact_every=0,
                                    **{k: v for k, v in spec.items() if k != "family"})
    marks = set(checkpoints(steps, points))
    cpu0 = server_cpu()
    try:
        for t in range(steps):
            upper, inner = batch_at(t)
            start = time.perf_counter()
            session.step(upper, inner)
            run.seconds += time.perf_counter() - start
            if t + 1 in marks:
                dec = session.decision()
                loss, acc = score(dec)
                run.curve.append((t + 1, loss, acc))
                run.x = np.asarray(dec.x)
    except f2obo.InvalidArgument as e:
        run.error = "refused at step %d: %s" % (t + 1, str(e).splitlines()[0][:120])
    finally:
        run.cpu = server_cpu() - cpu0
        client.delete_session(session.id)
    if run.curve and not np.isfinite(run.final):
        run.error = run.error or "non-finite held-out loss"
    return run


def grid_search(values, trial, task, label="grid"):
    """The best fixed hyperparameter in hindsight: `trial(v) -> Run` for every
    v, the one with the lowest *held-out* final loss (an oracle no user has:
    the strongest fixed baseline).  Its record sums every trial's time and
    passes."""
    runs = [(v, trial(v)) for v in values]
    ok = [(v, r) for v, r in runs if r.error is None and np.isfinite(r.final)]
    value, best = min(ok, key=lambda vr: vr[1].final)
    out = Run(task, label, best.algorithm, chosen=value,
              trials=len(runs))
    out.curve, out.x = best.curve, best.x
    out.seconds = sum(r.seconds for _, r in runs)
    out.cpu = sum(r.cpu for _, r in runs)
    out.passes = sum(r.passes for _, r in runs)
    out.extra["table"] = [(v, r.final) for v, r in runs]
    return out


def optuna_available():
    try:
        import optuna  # noqa: F401
        return True
    except ImportError:
        return False


def equal_compute_search(budget_cpu, low, high, trial, validation, task, seed=1):
    """Optuna's TPE (python3-optuna; a seeded random search over the same
    log-uniform range when it is not installed) over one scalar in
    [low, high] (log scale; 0 is tried as `low`), trials until their summed
    CPU time reaches `budget_cpu` (the CPU time of one default pass of the
    algorithm compared: equal compute) — at least one trial.  Each trial is a full pass with the value
    held fixed, judged by `validation(run)` (rows the algorithms also see,
    never the test rows); the chosen trial's held-out curve is reported."""
    have_optuna = optuna_available()
    runs = []
    if have_optuna:
        import optuna
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed))

        def objective(t):
            v = t.suggest_float("c", low, high, log=True)
            r = trial(v)
            runs.append((v, r, validation(r)))
            return runs[-1][2] if np.isfinite(runs[-1][2]) else 1e300

        spent = 0.0
        while not runs or spent < budget_cpu:
            study.optimize(objective, n_trials=1)
            spent = sum(r.cpu for _, r, _ in runs)
    else:
        rng = np.random.default_rng(seed)
        spent = 0.0
        while not runs or spent < budget_cpu:
            v = float(math.exp(rng.uniform(math.log(low), math.log(high))))
            r = trial(v)
            runs.append((v, r, validation(r)))
            spent += r.cpu
    v, best, _ = min(runs, key=lambda vrv: vrv[2] if np.isfinite(vrv[2]) else 1e300)
    out = Run(task, "optuna" if have_optuna else "random", best.algorithm, chosen=v,
              trials=len(runs))
    out.curve, out.x = best.curve, best.x
    out.seconds = sum(r.seconds for _, r, _ in runs)
    out.cpu = sum(r.cpu for _, r, _ in runs)
    out.passes = sum(r.passes for _, r, _ in runs)
    return out


def class_defaults(client):
    """Each problem class's default algorithm as the server has it: the
    algorithm of a session created without one."""
    probes = {"bilevel": dict(family="ridge_hpo", features=2),
              "simple_bilevel": dict(family="least_squares", features=2,
                                     problem_class="simple_bilevel", l1_ball={"radius": 1.0}),
              "multitask_bilevel": dict(family="multitask_logistic_hpo", features=2, classes=2,
                                        tasks=2, problem_class="multitask_bilevel")}
    out = {}
    for cls, spec in probes.items():
        s = client.create_session(**spec)
        try:
            out[cls] = client.get_session(s.id).spec.algorithm
        finally:
            client.delete_session(s.id)
    return out


def cross_entropy(y, a, labels, classes):
    """Mean softmax cross-entropy and accuracy of y = (W d x C feature-major,
    b) on rows a: logistic_hpo's and loss_tuning's model layout."""
    d = a.shape[1]
    w = y[:d * classes].reshape(d, classes)
    b = y[d * classes:d * classes + classes]
    z = a @ w + b
    z -= z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    ce = -logp[np.arange(len(labels)), labels]
    return ce, (z.argmax(axis=1) == labels)
