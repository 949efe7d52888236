"""The simple class's suite task: the over-parameterized diabetes
regression on an l1 ball (EXPERIMENTS.md section R): the best validation
loss among the training-loss minimizers, min f s.t. x in argmin_Z g, with
g* = 0 and f* certified by a KKT solve.

Every run is reported twice, by two measures, as two tasks of the table:
  simple_regression           the held-out loss, 0.5 mean (A_e x - b_e)^2 on
                              the 282 test rows no run sees: the bar's
                              measure ("final held-out loss"), as on the
                              other tasks;
  simple_regression_distance  the distance to the bilevel optimum in value,
                              (g(x) - g*) + |f(x) - f*| (both matter: a
                              small f bought with an infeasible x is no
                              solution): how well the problem posed is
                              solved, a much stricter measure (a distance
                              to 0, so 2% of it is a very tight bar).
The runs are the same; each task's "best fixed in hindsight" is the grid
row best by its own measure, and Optuna, which must not see test rows,
chooses by the distance (f, g are the validation and training losses; f*
is known) for both.  The best fixed value in hindsight is, for both
records, the grid value that best solves the problem posed (least
distance, an oracle: f* is known), reported by each measure: the lowest
held-out loss of any grid value belongs to a run far from argmin g (a
large weight on f fits the validation rows instead of the training rows,
and on these splits that predicts the test rows better: IR-SCG's default,
inner gap ~0.17, test loss 0.44 on seed 1), not to a solution, and is only
noted beside it.

The untuned start is the lower level alone: argmin_Z g reached from x_0 = 0
without f (projected FISTA on the training loss, 20,000 iterations; the
least-norm interpolant when the ball is inactive): the training-loss
minimizer a user gets without the bilevel selection.  x_0 = 0 itself is
shown as "start x_0 = 0": it is not a training-loss minimizer (g(0) ~ 0.5),
and on these splits it predicts the test rows better than every one (test
loss ~0.47 against ~0.87 at x*, 32 training rows for 65 features): no
algorithm solving this problem can beat it on the held-out loss, so the
task says how well the selection among the minimizers generalizes, not
whether to interpolate.  The constant searched is each algorithm's own:
the regularization scale varsigma of IR-SCG / IR-FSCG (sigma_t = varsigma
(t+1)^-p, the weight of f) and AGM-BiO's gamma (a_k = gamma (k+1)/(4 L_f);
by default 1/(2 (L_g/L_f) K^(2/3) + 2) from the smoothness constants and
the horizon K, doubled at each restart, 1000, 2000, 4000, ..., on a stream
of unknown length): a grid of 12 full passes per algorithm (best in
hindsight) and Optuna at the CPU time of that algorithm's default pass.
"""
import copy
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "experiments", "simple"))

from run_simple_experiments import cyclic_steps, exact_regression_fstar, regression_data  # noqa
from suite_common import Run, equal_compute_search, grid_search, run_session  # noqa: E402

TASK = "simple_regression"
DISTANCE_TASK = "simple_regression_distance"


def project_l1(u, radius):
    """The Euclidean projection onto {||x||_1 <= radius} (sort and threshold)."""
    if np.abs(u).sum() <= radius:
        return u.copy()
    a = np.sort(np.abs(u))[::-1]
    cs = np.cumsum(a)
    k = np.nonzero(a * np.arange(1, len(a) + 1) > cs - radius)[0][-1]
    return np.sign(u) * np.maximum(np.abs(u) - (cs[k] - radius) / (k + 1), 0.0)


def lower_level_alone(At, bt, radius, iterations=20000):
    """argmin_Z g from x_0 = 0 without f: projected FISTA on g = 0.5 mean
    (At x - bt)^2 over the l1 ball, step 1/L_g."""
    lg = float(np.linalg.eigvalsh(At.T @ At / len(bt))[-1])
    x = v = np.zeros(At.shape[1])
    theta = 1.0
    for _ in range(iterations):
        x_next = project_l1(v - At.T @ (At @ v - bt) / len(bt) / lg, radius)
        theta_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * theta * theta))
        v = x_next + ((theta - 1.0) / theta_next) * (x_next - x)
        x, theta = x_next, theta_next
    return x


def fmt_value(v):
    return "%.3g" % v


def regression(client, f2obo, args):
    At, bt, Av, bv, Ae, be = regression_data(args.seed)
    ref = exact_regression_fstar(Av, bv, At, bt, 2.0)
    if not ref["cert"]["optimal"]:
        raise RuntimeError("the f* solve is not certified optimal: %s" % ref["cert"])
    f_star, delta = ref["f_star"], ref["delta"]
    steps = args.simple_steps
    up = cyclic_steps(Av, bv, 16, steps)
    inn = cyclic_steps(At, bt, 4, steps)

    def parts(x):
        f = 0.5 * float(np.mean((Av @ x - bv) ** 2))
        g = 0.5 * float(np.mean((At @ x - bt) ** 2))
        test = 0.5 * float(np.mean((Ae @ x - be) ** 2))
        return test, g + abs(f - f_star), g, f - f_star

    distances = []  # the distance curve of the run in progress

    def score(dec):
        test, dist, _, _ = parts(np.asarray(dec.x))
        distances.append(dist)
        return test, None

    class_default = getattr(args, "class_default", {}).get("simple_bilevel", "agm_bio")

    def annotate(run):
        if run.x is not None:
            test, dist, g, gap = parts(run.x)
            run.extra["note"] = "inner gap %.3g, f - f* %+.3g; test loss %.4g, distance %.3g" % (
                g, gap, test, dist)
            run.extra["distance"] = dist
            run.extra["inner_gap"] = g
        return run

    def session(method, algorithm, spec):
        del distances[:]
        run = run_session(client, f2obo, TASK, method, algorithm, spec, steps,
                          lambda t: (up[t], inn[t]), score)
        run.extra["distance_curve"] = [(c[0], d, None) for c, d in zip(run.curve, distances)]
        return annotate(run)

    def twin(run):
        """The same run's record by the distance (its own task)."""
        out = copy.copy(run)
        out.extra = {k: v for k, v in run.extra.items()
                     if k not in ("distance_curve", "table")}
        out.task = DISTANCE_TASK
        out.curve = run.extra.get("distance_curve") or []
        return out

    def fixed_point(method, label, x):
        run = Run(TASK, method, label)
        test, dist, _, _ = parts(x)
        run.curve, run.x, run.passes = [(0, test, None)], x, 0
        run.extra["distance_curve"] = [(0, dist, None)]
        return annotate(run)

    spec = dict(family="least_squares", features=At.shape[1], problem_class="simple_bilevel",
                l1_ball={"radius": delta}, seed=args.seed)
    test_rows = [fixed_point("untuned", "lower level alone", lower_level_alone(At, bt, delta)),
                 fixed_point("start", "x_0 = 0", np.zeros(At.shape[1]))]
    distance_rows = [twin(r) for r in test_rows]
    for algorithm in sorted(("agm_bio", "ir_scg", "ir_fscg"), key=lambda a: a != class_default):
        default = session("default", algorithm, spec)
        test_rows.append(default)
        distance_rows.append(twin(default))
        if not args.search:
            continue
        option, grid, low, high = SEARCH[algorithm]
        trials = {}

        def trial(value, algorithm=algorithm, option=option, trials=trials):
            if value not in trials:
                trials[value] = session("trial", algorithm, dict(spec, **{option: value}))
            return trials[value]

        # The best fixed value in hindsight is the one that best solves the
        # problem posed (least distance: an oracle, f* known); the held-out
        # record reports that run by its test loss, and run_quality_suite's
        # best_fixed compares trainers by the distance ("select").  The
        # lowest held-out loss of any grid value is only noted: it belongs
        # to a run far from argmin g (on this task leaving argmin g lowers
        # the test loss: IR-SCG's default, inner gap ~0.17, test loss 0.44
        # on seed 1, against ~0.87 at x*), not to a solution.
        by_distance = grid_search(grid, lambda v: twin(trial(v)), DISTANCE_TASK)
        best = trials[by_distance.extra["chosen"]]
        by_test = copy.copy(by_distance)
        by_test.task, by_test.curve, by_test.x = TASK, best.curve, best.x
        by_test.extra = dict(by_distance.extra, select=by_distance.final)
        by_test.extra.pop("table", None)
        low_v = min(grid, key=lambda v: trial(v).final if np.isfinite(trial(v).final) else np.inf)
        by_distance.extra["note"] = "%s; %s" % (option, best.extra["note"])
        by_test.extra["note"] = "%s; %s; lowest test loss of the grid %.4g (%s, inner gap %.3g)" % (
            option, best.extra["note"], trial(low_v).final, fmt_value(low_v),
            trial(low_v).extra.get("inner_gap", float("nan")))
        # Optuna sees no test rows: it judges a trial by the distance, on the
        # data the algorithm saw (f and g are the validation and training
        # losses; f* is known); its choice is reported by both measures.
        searched = equal_compute_search(default.cpu, low, high, trial,
                                        lambda r: r.extra.get("distance", float("nan")), TASK,
                                        args.seed)
        chosen = trial(searched.extra["chosen"])
        searched.extra["distance_curve"] = chosen.extra["distance_curve"]
        searched.extra["note"] = "%s; %s" % (option, chosen.extra["note"])
        test_rows += [by_test, searched]
        distance_rows += [by_distance, twin(searched)]
    for r in test_rows:
        r.extra.pop("distance_curve", None)
    return test_rows + distance_rows


# Per algorithm: the constant searched, its grid (12 values: the default
# pass is 1/12 of the grid's passes) and Optuna's log range.
SEARCH = {
    "ir_scg": ("reg_scale", [0.01, 0.03, 0.1, 0.3, 0.5, 1.0, 2.0, 3.0, 10.0, 30.0, 100.0, 300.0],
               1e-3, 1e3),
    "ir_fscg": ("reg_scale", [0.01, 0.03, 0.1, 0.3, 0.5, 1.0, 2.0, 3.0, 10.0, 30.0, 100.0, 300.0],
                1e-3, 1e3),
    "agm_bio": ("agm_gamma", [1e-4, 3e-4, 1e-3, 2e-3, 3e-3, 5e-3, 0.01, 0.02, 0.05, 0.1, 0.3, 1.0],
                1e-4, 1.0),
}
