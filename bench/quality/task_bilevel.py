"""The bilevel class's suite tasks: per-feature L2 HPO on digits
(the F2OBO paper's Sec. 6.2) and loss tuning under a class-imbalance drift
(Sec. 6.1), each: every bilevel first-order algorithm at its defaults, the
untuned start, the best fixed hyperparameter in hindsight (a grid of full
passes) and Optuna (or a random search) at the compute of f2obo's default
pass.

The fixed-hyperparameter runs (untuned, grid, Optuna trials) are sessions
of a *trainer* with x held by the box [c, c]: the same trainer for y as
the default run it is compared with, so the comparison isolates the effect
of moving x.  The trainers are the class default (`args.class_default`,
read from the server: sf2obo) and f2obo, each with its own
untuned start, grid and Optuna search (Optuna's budget: the CPU time of
that algorithm's default pass).  AF2OBO trains y differently (its loops run
to tolerances), so it also gets its own untuned start (af2obo with x held
at x_1).  `args.search = False` (the multi-seed mode without search) leaves
out the grids and Optuna.
"""
import numpy as np

from suite_common import (Run, cross_entropy, equal_compute_search, grid_search,
                          run_session)

CLASSES = 10


def digits_l2_data(seed, train_rows=100):
    """Digits' 64 pixels in [0, 1] plus 64 uniform noise features, 30% of
    the training labels replaced by a random class, `train_rows` training
    rows (cycled), 500 validation rows, the other 1,197 held out."""
    from sklearn.datasets import load_digits
    rng = np.random.default_rng(seed)
    d = load_digits()
    a = np.hstack([d.data / 16.0, rng.random(d.data.shape)])
    labels = d.target.astype(np.int64)
    order = rng.permutation(len(labels))
    tr, va, te = order[:train_rows], order[train_rows:train_rows + 500], order[train_rows + 500:]
    noisy = labels[tr].copy()
    flip = rng.random(len(tr)) < 0.3
    noisy[flip] = rng.integers(0, CLASSES, flip.sum())
    return (a[tr], noisy), (a[va], labels[va]), (a[te], labels[te])


# The fixed-hyperparameter passes (untuned start, grid, trials) of a seed,
# shared by a task's narrow and wide variants: a run with x held at c does
# not depend on the box the default runs move in.
_FIXED = {}


def digits_l2(client, f2obo, args, algorithms, wide=False):
    """`wide`: the default runs' box is [0, 10], 100x the CLI's [0, 0.1]
    around the same best fixed value (interior in both: 0.005-0.05)."""
    task = "digits_l2_wide" if wide else "digits_l2"
    hi = 10.0 if wide else 0.1
    steps, per = args.steps, 32
    (a_tr, l_tr), (a_va, l_va), (a_te, l_te) = digits_l2_data(args.seed)
    feats = a_tr.shape[1]

    def batch_at(t):
        i = np.arange(t * per, (t + 1) * per)
        return ((a_va[i % len(l_va)], l_va[i % len(l_va)]),
                (a_tr[i % len(l_tr)], l_tr[i % len(l_tr)]))

    def score(dec):
        ce, hit = cross_entropy(np.asarray(dec.y), a_te, l_te, CLASSES)
        return float(ce.mean()), float(hit.mean())

    def spec(lo, hi):
        return dict(family="logistic_hpo", features=feats, classes=CLASSES, box=(lo, hi),
                    seed=args.seed)

    runs = []
    for algorithm in algorithms:
        runs.append(run_session(client, f2obo, task, "default", algorithm, spec(0.0, hi), steps,
                                batch_at, score))
    untuned = {}
    for trainer in trainers(args, algorithms):
        key = ("digits_l2", args.seed, trainer, 0.0)
        if key not in _FIXED:
            _FIXED[key] = run_session(client, f2obo, task, "untuned", trainer, spec(0.0, 0.0),
                                      steps, batch_at, score)
        untuned[trainer] = _relabel(_FIXED[key], task, "untuned")
        runs.append(untuned[trainer])
    if not args.search:
        return runs

    def validation(r):
        # The trial's final model on the validation rows (the upper rows it saw).
        ce, _ = cross_entropy(r.x_y, a_va, l_va, CLASSES)
        return float(ce.mean())

    for trainer in searched(args):
        cache = {0.0: untuned[trainer]}

        def fixed(c, trainer=trainer, cache=cache):
            key = ("digits_l2", args.seed, trainer, c)
            if c not in cache:
                if key not in _FIXED:
                    _FIXED[key] = run_session(client, f2obo, task, "fixed", trainer, spec(c, c),
                                              steps, batch_at, score)
                cache[c] = _FIXED[key]
            return cache[c]

        runs.append(grid_search([0.0, 3e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 0.01, 0.02, 0.05,
                                 0.1], fixed, task))
        holder = {}

        def trial(c, trainer=trainer, holder=holder):
            r = run_session(client, f2obo, task, "trial", trainer, spec(c, c), steps, batch_at,
                            lambda dec: _keep_y(holder, dec, score))
            r.x_y = holder["y"]
            return r

        runs.append(equal_compute_search(default_cpu(runs, trainer), 1e-5, hi, trial, validation,
                                         task, args.seed))
    return runs


def _relabel(run, task, method):
    """A shared fixed pass as a row of `task`."""
    out = Run(task, method, run.algorithm)
    out.curve, out.x, out.seconds, out.cpu, out.passes = (run.curve, run.x, run.seconds, run.cpu,
                                                          run.passes)
    out.error = run.error
    if hasattr(run, "x_y"):
        out.x_y = run.x_y
    return out


def trainers(args, algorithms):
    """The algorithms that get an untuned start: the searched ones, and
    AF2OBO when it runs (its own trainer for y)."""
    return searched(args) + [a for a in ("af2obo",) if a in algorithms]


def searched(args):
    """The trainers of the fixed-hyperparameter baselines: the class
    default and f2obo (once each)."""
    return list(dict.fromkeys([args.class_default["bilevel"], "f2obo"]))


def default_cpu(runs, algorithm):
    return next(r.cpu for r in runs if r.method == "default" and r.algorithm == algorithm)


def _keep_y(holder, dec, score):
    holder["y"] = np.asarray(dec.y)
    return score(dec)


def loss_tuning_data(seed):
    """Digits' 64 pixels in [0, 1]; 500 rows held out (balanced by chance),
    the other 1,297 the stream's pool."""
    from sklearn.datasets import load_digits
    rng = np.random.default_rng(seed)
    d = load_digits()
    a, labels = d.data / 16.0, d.target.astype(np.int64)
    order = rng.permutation(len(labels))
    pool, te = order[500:], order[:500]
    return (a[pool], labels[pool]), (a[te], labels[te])


def balanced(ce, hit, labels):
    """Class-balanced mean CE and accuracy (every class weighs 1/C)."""
    present = [j for j in range(CLASSES) if (labels == j).any()]
    return (float(np.mean([ce[labels == j].mean() for j in present])),
            float(np.mean([hit[labels == j].mean() for j in present])))


def loss_tuning(client, f2obo, args, algorithms, wide=False):
    """Class i kept with probability rho^i, rho 0.6 in the first half of the
    stream and 0.9 in the second (the CLI's drift schedule, f2obo.DriftingStream,
    the paper's Sec. 6.1), 32 + 32 rows a step; held-out: balanced CE and
    accuracy on 500 rows.  The fixed-hyperparameter family is logit
    adjustment (Menon et al.): gamma = 1, Delta_j = tau log pi_j with pi_j
    the class frequencies of the whole stream's training rows (hindsight).
    The default runs move in a box that keeps the class weights positive:
    gamma_j in [0.1, 10], Delta_j in [-5, 5]; `wide`: 100x, gamma_j in
    [0.001, 1000], Delta_j in [-500, 500] (the same start, gamma = 1,
    Delta = 0)."""
    task = "loss_tuning_drift_wide" if wide else "loss_tuning_drift"
    g_lo, g_hi, d_hi = (1e-3, 1e3, 500.0) if wide else (0.1, 10.0, 5.0)
    steps = args.steps
    (a_pool, l_pool), (a_te, l_te) = loss_tuning_data(args.seed)
    stream = f2obo.DriftingStream(a_pool, l_pool, rows_per_step=64, upper_fraction=0.5,
                                  imbalance=(0.6, 0.9), phase_steps=(steps + 1) // 2,
                                  seed=args.seed)
    batches = [stream[t + 1] for t in range(steps)]
    counts = np.bincount(np.concatenate([inner[1] for _, inner in batches]), minlength=CLASSES)
    log_pi = np.log(np.maximum(counts, 1) / counts.sum())
    feats = a_pool.shape[1]

    def score(dec):
        ce, hit = cross_entropy(np.asarray(dec.y), a_te, l_te, CLASSES)
        return balanced(ce, hit, l_te)

    def spec(x=None):
        s = dict(family="loss_tuning", features=feats, classes=CLASSES, seed=args.seed)
        if x is not None:
            s["box"] = (list(x), list(x))
            s["x0"] = list(x)
        else:
            s["box"] = ([g_lo] * CLASSES + [-d_hi] * CLASSES, [g_hi] * CLASSES + [d_hi] * CLASSES)
        return s

    def adjusted(tau):
        return np.concatenate([np.ones(CLASSES), tau * log_pi])

    runs = []
    for algorithm in algorithms:
        runs.append(run_session(client, f2obo, task, "default", algorithm, spec(), steps,
                                lambda t: batches[t], score))
    caches = {}

    def fixed_of(trainer):
        cache = caches.setdefault(trainer, {})
        holder = {}

        def fixed(tau):
            key = ("loss_tuning", args.seed, trainer, tau)
            if tau not in cache:
                if key not in _FIXED:
                    r = run_session(client, f2obo, task, "fixed", trainer, spec(adjusted(tau)),
                                    steps, lambda t: batches[t],
                                    lambda dec: _keep_y(holder, dec, score))
                    r.x_y = holder["y"]
                    _FIXED[key] = r
                cache[tau] = _FIXED[key]
            return cache[tau]
        return fixed

    for trainer in trainers(args, algorithms):
        untuned = fixed_of(trainer)(0.0)
        u = Run(task, "untuned", trainer)
        u.curve, u.x, u.seconds, u.cpu = untuned.curve, untuned.x, untuned.seconds, untuned.cpu
        runs.append(u)
    if not args.search:
        return runs

    def validation(r):
        # Balanced CE of the trial's final model on the pool (the stream's rows).
        ce, hit = cross_entropy(r.x_y, a_pool, l_pool, CLASSES)
        return balanced(ce, hit, l_pool)[0]

    for trainer in searched(args):
        fixed = fixed_of(trainer)
        runs.append(grid_search([0.0, 0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0],
                                fixed, task))
        runs.append(equal_compute_search(default_cpu(runs, trainer), 0.05, 3.0, fixed, validation,
                                         task, args.seed))
    return runs
