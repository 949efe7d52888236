#!/usr/bin/python3
"""The quality suite: is a user's model better with the online
tuner's defaults than with the hyperparameters they would have picked, and
at what cost?  One command, every problem class, offline data:

    /usr/bin/python3 bench/quality/run_quality_suite.py --build build

Tasks (bench/quality/task_*.py): per-feature L2 HPO on digits and loss
tuning under an imbalance drift (bilevel class), the over-parameterized
diabetes regression on an l1 ball (simple class), multi-task HPO on the 45
digits class pairs (multi-task class).  Per task: each algorithm of the
class at its defaults, the untuned start, the best fixed hyperparameter in
hindsight (a grid of 12 full passes, chosen on the held-out rows: an
oracle), and Optuna's TPE (python3-optuna; a random search if it is
missing, and the table says so) given the compute (server CPU time) of the
default pass it is compared with.  Each class's default algorithm is read
from the server (a session created without one); the table ends with the
defaults' bar for it on every task, and for f2obo on the bilevel tasks, and the
command exits 1 when a bar is not met.

Writes bench/quality/results/{suite.csv,table.md,meta.txt} and the PNGs
bench/quality/quality_*.png (with --out DIR, both into DIR instead), and (with --experiments) the table into
bench/EXPERIMENTS.md between the "quality-suite" markers, and the "done
when" table (each class default against the untuned start, the best fixed
hyperparameter in hindsight and Optuna, over the seeds; results/done_when.md)
into bench/RESULTS.md between the "quality-done-when" markers.  --seeds 1,2,3
runs the tasks once per seed (data split, noise, stream order and session
seeds all follow it) and adds a table of each result's mean and spread
over the seeds (results/seeds.md; with --experiments between the
"quality-seeds" markers), so that a default is judged on more than one
stream; --no-search leaves out the grid and Optuna (the defaults and the
untuned starts only: a multi-seed comparison within ~15 minutes).  --quick is a
smaller run (what ctest's quality_quick covers is the separate
quick_quality.py).  Needs Debian's python3 (numpy, scipy, scikit-learn,
matplotlib) and the client built into <build>/python (target f2obo_python).
"""
import argparse
import csv
import datetime
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import suite_common  # noqa: E402


# "_wide": the bilevel tasks' boxes widened 100x around the same optimum.
ALL_TASKS = "digits_l2,digits_l2_wide,loss_tuning,loss_tuning_wide,simple,multitask"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--quick", action="store_true", help="short streams (a smoke run)")
    ap.add_argument("--tasks", default=ALL_TASKS)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seeds", default=None,
                    help="comma-separated seeds (default: --seed only); adds a mean/spread table")
    ap.add_argument("--no-search", dest="search", action="store_false",
                    help="skip the grid and Optuna baselines")
    ap.add_argument("--out", default=None,
                    help="directory for the tables and the PNGs (default: the tracked "
                         "bench/quality/results/ and bench/quality/quality_*.png; a test or a "
                         "trial run gives its own, so that no tracked file changes)")
    ap.add_argument("--experiments", action="store_true",
                    help="write the table into bench/EXPERIMENTS.md")
    ap.add_argument("--rsvrb_options", default="",
                    help="KEY=VALUE[,KEY=VALUE...]: options of the multi-task task's rsvrb "
                         "run over its defaults (e.g. rsvrb_decay=0: constant steps)")
    ap.add_argument("--mt_steps", type=int, default=None,
                    help="steps of the multi-task stream (default 300, 75 with --quick)")
    args = ap.parse_args()
    args.seed_list = [int(v) for v in (args.seeds or str(args.seed)).split(",")]
    scale = 4 if args.quick else 1
    args.steps = 1000 // scale
    args.simple_steps = 4096 // scale
    args.mt_steps = args.mt_steps or 300 // scale
    return args


def fmt(v, digits=4):
    if v is None:
        return "-"
    if isinstance(v, float):
        return "%.*g" % (digits, v)
    return str(v)


def table(rows, searcher, class_defaults):
    lines = ["| task | method | algorithm | held-out loss | acc | vs untuned | vs best fixed | "
             "wall s | CPU s | passes | note |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    by_task = {}
    for r in rows:
        by_task.setdefault(r["task"], []).append(r)
    for task, rs in by_task.items():
        for r in rs:
            base, grid = untuned_of(rs, r["algorithm"]), best_fixed(rs)
            base, grid = base and base["loss"], grid and grid["loss"]
            note = r.get("error") or ""
            if r.get("chosen") is not None:
                note = ("chosen %s of %d trials; " % (fmt(r["chosen"], 3), r["trials"])) + note
            if r.get("note"):
                note += r["note"]
            rel = lambda ref: "-" if ref is None else "%+.1f%%" % (100 * (r["loss"] / ref - 1))
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %.1f | %.2f | %s | %s |" % (
                task, r["method"], r["algorithm"], fmt(r["loss"]), fmt(r["acc"], 3), rel(base),
                rel(grid), r["seconds"], r["cpu"], fmt(r["passes"], 3), note.strip("; ")))
    lines.append("")
    lines.append(verdict(rows, class_defaults))
    lines.append("")
    lines.append("Loss: held-out (test rows no run saw), except simple_regression_distance: the "
                 "same runs as simple_regression by their distance to the bilevel optimum in "
                 "value, (g - g*) + |f - f*| (its grid row chosen by that distance); \"vs\": "
                 "relative to the same "
                 "algorithm's untuned start (else the task's) and to the best fixed "
                 "hyperparameter in hindsight (the task's best grid row, any trainer; negative = "
                 "better). CPU s: the server's CPU time of the run's steps (client CPU for the "
                 "multi-task task's exact solves). Search at equal compute: %s." % searcher)
    return "\n".join(lines)


# The bilevel algorithms run at their defaults on the bilevel tasks.
BILEVEL = ["f2obo", "sf2obo", "af2obo"]

# The problem class of each task (its class default is compared there).
TASK_CLASS = {"digits_l2": "bilevel", "loss_tuning_drift": "bilevel",
              "digits_l2_wide": "bilevel", "loss_tuning_drift_wide": "bilevel",
              "simple_regression": "simple_bilevel",
              "simple_regression_distance": "simple_bilevel",
              "multitask_hpo": "multitask_bilevel"}


def untuned_of(rs, algorithm):
    """The untuned start of `algorithm` among one task's rows of one seed
    (its own trainer with x held at x_1), else the task's first."""
    same = [q for q in rs if q["method"] == "untuned" and q["algorithm"] == algorithm]
    alls = [q for q in rs if q["method"] == "untuned"]
    return (same or alls or [None])[0]


def best_fixed(rs):
    """The best fixed hyperparameter in hindsight among one task's rows of
    one seed: the grid row (any trainer) with the lowest held-out loss."""
    grids = [q for q in rs if q["method"] == "grid" and np.isfinite(q["loss"])]
    # "select": a task's own criterion when it is not the loss reported
    # (the simple task's held-out record: the distance to the optimum).
    return min(grids, key=lambda q: q.get("select", q["loss"])) if grids else None


def gate(rows, class_defaults):
    """The "done when" per task and seed: the class default's run beats its
    untuned start and ends within 2% of the best fixed hyperparameter in
    hindsight (or better) with at most 1/10 of the grid's passes; on the
    bilevel tasks every one of BILEVEL (f2obo, sf2obo, af2obo) at its
    defaults beats its own untuned start.  Each entry: (task, algorithm,
    ok, default row, untuned row, grid row)."""
    out = []
    for task in sorted({r["task"] for r in rows}):
        rs = [r for r in rows if r["task"] == task]
        default = class_defaults.get(TASK_CLASS.get(task))
        algorithms = [default]
        if TASK_CLASS.get(task) == "bilevel":
            algorithms += BILEVEL
        for algorithm in dict.fromkeys(a for a in algorithms if a):
            d = next((r for r in rs if r["method"] == "default" and r["algorithm"] == algorithm),
                     None)
            u, g = untuned_of(rs, algorithm), best_fixed(rs)
            if d is None or u is None or g is None:
                continue
            ok = bool(d["loss"] < u["loss"])
            if algorithm == default:
                ok = ok and d["loss"] <= 1.02 * g["loss"] and d["passes"] <= g["passes"] / 10.0
            out.append((task, algorithm, ok, d, u, g))
    return out


def verdict(rows, class_defaults):
    parts = ["%s, %s: %s (%.4g vs untuned %.4g, best fixed %.4g of %d passes)"
             % (task, a, "met" if ok else "NOT met", d["loss"], u["loss"], g["loss"], g["passes"])
             for task, a, ok, d, u, g in gate(rows, class_defaults)]
    return ("The bar for the class defaults (%s) and f2obo: " % ", ".join(
        "%s %s" % (c, a) for c, a in class_defaults.items())
        + ("; ".join(parts) or "no task with a search run") + ".")


def done_when_table(all_rows, seeds, class_defaults):
    """The class defaults' bar over the seeds: per task, the class default
    (and f2obo on the bilevel tasks) against its untuned start, the best
    fixed hyperparameter in hindsight and Optuna at equal compute, with
    the compute of each (passes, server CPU seconds)."""
    lines = ["| task | algorithm | default: held-out loss | untuned | beats untuned | best fixed in "
             "hindsight (chosen) | default vs best fixed | within 2% | compute: default / grid "
             "(passes; CPU s) | Optuna at equal compute (trials; CPU s) | met |",
             "|---|---|---:|---:|---:|---|---:|---:|---|---|---|"]
    by = {}
    for seed in seeds:
        for task, a, ok, d, u, g in gate([r for r in all_rows if r["seed"] == seed],
                                         class_defaults):
            rs = [r for r in all_rows if r["seed"] == seed and r["task"] == task]
            o = next((r for r in rs if r["method"] in ("optuna", "random") and
                      r["algorithm"] == a), None) or next(
                (r for r in rs if r["method"] in ("optuna", "random")), None)
            by.setdefault((task, a), []).append((ok, d, u, g, o))
    mean = lambda v: float(np.mean(v))
    for (task, a), es in by.items():
        n = len(es)
        dl = [d["loss"] for _, d, _, _, _ in es]
        ul = [u["loss"] for _, _, u, _, _ in es]
        gl = [g["loss"] for _, _, _, g, _ in es]
        rel = [d["loss"] / g["loss"] - 1 for _, d, _, g, _ in es]
        chosen = ", ".join("%s %s" % (g["algorithm"], fmt(g.get("chosen"), 3))
                           for _, _, _, g, _ in es)
        opt = [o for *_, o in es if o is not None]
        lines.append("| %s | %s | %s | %s | %d of %d | %s (%s) | %+.1f%% | %d of %d | "
                     "1 / %s; %.2f / %.1f (1/%.0f) | %s (%s; %.2f) | %s |" % (
                         task, a, fmt(mean(dl)), fmt(mean(ul)),
                         sum(d["loss"] < u["loss"] for _, d, u, _, _ in es), n,
                         fmt(mean(gl)), chosen, 100 * mean(rel),
                         sum(d["loss"] <= 1.02 * g["loss"] for _, d, _, g, _ in es), n,
                         fmt(mean([g["passes"] for *_, g, _ in es]), 3),
                         mean([d["cpu"] for _, d, _, _, _ in es]),
                         mean([g["cpu"] for *_, g, _ in es]),
                         mean([g["cpu"] for *_, g, _ in es]) /
                         max(1e-9, mean([d["cpu"] for _, d, _, _, _ in es])),
                         fmt(mean([o["loss"] for o in opt])) if opt else "-",
                         "%.1f" % mean([o["trials"] for o in opt]) if opt else "-",
                         mean([o["cpu"] for o in opt]) if opt else 0.0,
                         "yes" if all(ok for ok, *_ in es) else
                         "%d of %d seeds" % (sum(ok for ok, *_ in es), n)))
    lines.append("")
    lines.append("simple_regression: the held-out (test) loss, the bar's measure; "
                 "simple_regression_distance: the same runs' distance to the bilevel optimum in "
                 "value, (g - g*) + |f - f*|, a far stricter measure (a distance to 0); the "
                 "simple class's untuned start is the lower level alone (argmin g from x_0 = 0, "
                 "no selection by f); its best fixed row is, for both measures, the grid value "
                 "that best solves the problem (least distance, f* known), reported by each "
                 "measure (the lowest test loss of any grid value, far from argmin g, is in the "
                 "table's note).")
    lines.append("Means over seeds %s (per seed: the same split, noise, stream and session "
                 "seed for every method). Best fixed: the task's best grid row, any trainer, "
                 "chosen on the held-out rows (an oracle); chosen = trainer and value per seed. "
                 "\"Within 2%%\": default <= 1.02 x best fixed. Met, in every seed: the class "
                 "default beats its untuned start, within 2%% and at most 1/10 of the grid's "
                 "passes; f2obo and af2obo (not the class default) beat their untuned start."
                 % ", ".join(str(v) for v in seeds))
    return "\n".join(lines)


def plot(runs, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    by_task = {}
    for r in runs:
        by_task.setdefault(r.task, []).append(r)
    paths = []
    for task, rs in by_task.items():
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
        for i, r in enumerate(rs):
            if not r.curve:
                continue
            k = [c[0] for c in r.curve]
            v = [c[1] for c in r.curve]
            label = "%s %s" % (r.method, r.algorithm)
            if len(k) == 1:  # a fixed point's score (x_0, exact y*(x)): a level
                ax.axhline(v[0], ls=":", lw=1.2, label=label, color="C%d" % (i % 10))
                continue
            style = "-o" if r.method == "default" else "--"
            ax.plot(k, v, style, ms=3, label=label, color="C%d" % (i % 10))
        ax.set_xlabel("step")
        if task == "simple_regression_distance":  # a distance to the optimum, over decades
            ax.set_ylabel("distance to the bilevel optimum, (g - g*) + |f - f*|")
            ax.set_yscale("log")
        elif task == "simple_regression":
            ax.set_ylabel("held-out (test) loss, 0.5 mean (A_e x - b_e)^2")
        else:
            ax.set_ylabel("held-out loss")
        ax.set_title(task)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(out_dir, "quality_%s.png" % task)
        fig.savefig(path, dpi=90)
        plt.close(fig)
        paths.append(path)
    return paths


def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return "%s, %d CPUs (%s), load %.1f at start" % (platform.node(), os.cpu_count(), cpu,
                                                   os.getloadavg()[0])


def seeds_table(rows, seeds):
    """Per (task, method, algorithm) over the seeds: the held-out loss's
    mean, standard deviation and range, the mean accuracy, the change
    against the same algorithm's untuned start of the same seed (mean, and
    in how many seeds it is better) and the mean wall time."""
    def untuned(r):
        return untuned_of([q for q in rows if q["seed"] == r["seed"] and q["task"] == r["task"]],
                          r["algorithm"])

    lines = ["| task | method | algorithm | seeds | held-out loss: mean | sd | min - max | acc | "
             "vs untuned: mean | better in | wall s | CPU s |",
             "|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    keys = []
    for r in rows:
        k = (r["task"], r["method"], r["algorithm"])
        if k not in keys:
            keys.append(k)
    for k in keys:
        rs = [r for r in rows if (r["task"], r["method"], r["algorithm"]) == k]
        loss = np.array([r["loss"] for r in rs], dtype=float)
        accs = [r["acc"] for r in rs if r["acc"] is not None]
        rel, better = [], 0
        for r in rs:
            u = untuned(r)
            if u is not None and u is not r and np.isfinite(r["loss"]):
                rel.append(r["loss"] / u["loss"] - 1)
                better += r["loss"] < u["loss"]
        lines.append("| %s | %s | %s | %d | %s | %s | %s - %s | %s | %s | %s | %.1f | %.2f |" % (
            k[0], k[1], k[2], len(rs), fmt(float(loss.mean())),
            fmt(float(loss.std(ddof=1))) if len(rs) > 1 else "-", fmt(float(loss.min())),
            fmt(float(loss.max())), fmt(float(np.mean(accs)), 3) if accs else "-",
            "%+.1f%%" % (100 * np.mean(rel)) if rel else "-",
            "%d of %d" % (better, len(rel)) if rel else "-",
            float(np.mean([r["seconds"] for r in rs])), float(np.mean([r["cpu"] for r in rs]))))
    lines.append("")
    lines.append("Seeds %s. \"vs untuned\": against the same algorithm's untuned start of the same "
                 "seed where the suite runs one (af2obo), else the task's (f2obo's for the bilevel "
                 "tasks); sd: sample standard deviation over the seeds." % ", ".join(str(v) for v in seeds))
    return "\n".join(lines)


def write_experiments(text, marker="quality-suite", doc_name="EXPERIMENTS.md"):
    path = os.path.join(HERE, "..", doc_name)
    with open(path) as f:
        doc = f.read()
    begin, end = "<!-- %s:begin -->" % marker, "<!-- %s:end -->" % marker
    if begin in doc:
        head, rest = doc.split(begin, 1)
        doc = head + begin + "\n" + text + "\n" + end + rest.split(end, 1)[1]
    else:
        doc = doc.rstrip("\n") + "\n\n" + begin + "\n" + text + "\n" + end + "\n"
    with open(path, "w") as f:
        f.write(doc)


def main():
    args = parse_args()
    sys.path.insert(0, os.path.join(os.path.abspath(args.build), "python"))
    import f2obo  # noqa: E402  (built into <build>/python)
    plots_dir = args.out if args.out is not None else HERE
    if args.out is None:
        args.out = os.path.join(HERE, "results")
    os.makedirs(args.out, exist_ok=True)
    started = time.time()
    when = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")
    mach = machine()
    commit = subprocess.run(["git", "-C", HERE, "describe", "--always", "--dirty"],
                            capture_output=True, text=True).stdout.strip()
    workdir = tempfile.mkdtemp(prefix="f2obo_suite_")
    server = suite_common.Server(os.path.abspath(args.build), workdir, 0)
    suite_common.SERVER_PID = server.proc.pid  # `nice` execs the server: the same pid
    runs, all_rows = [], []
    try:
        client = f2obo.Client(server.target)
        args.class_default = suite_common.class_defaults(client)
        for seed in args.seed_list:
            args.seed = seed
            seed_runs = []
            for name in args.tasks.split(","):
                t0 = time.time()
                if name in ("digits_l2", "digits_l2_wide"):
                    import task_bilevel
                    seed_runs += task_bilevel.digits_l2(client, f2obo, args, BILEVEL,
                                                        wide=name.endswith("_wide"))
                elif name in ("loss_tuning", "loss_tuning_wide"):
                    import task_bilevel
                    seed_runs += task_bilevel.loss_tuning(client, f2obo, args, BILEVEL,
                                                          wide=name.endswith("_wide"))
                elif name == "simple":
                    import task_simple
                    seed_runs += task_simple.regression(client, f2obo, args)
                elif name == "multitask":
                    import task_multitask
                    seed_runs += task_multitask.multitask_hpo(client, f2obo, args)
                else:
                    raise SystemExit("unknown task %r" % name)
                print("seed %d, %s: %.0f s" % (seed, name, time.time() - t0), flush=True)
            for r in seed_runs:
                row = r.row()
                row.pop("table", None)
                row["seed"] = seed
                all_rows.append(row)
            if not runs:
                runs = seed_runs  # the first seed's runs: its table and plots
    finally:
        server.stop()
    first = args.seed_list[0]
    rows = [r for r in all_rows if r["seed"] == first]
    keys = ["seed", "task", "method", "algorithm", "loss", "acc", "seconds", "cpu", "passes",
            "chosen", "trials", "error", "note"]
    with open(os.path.join(args.out, "suite.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        w.writerows(all_rows)
    searcher = ("Optuna %s TPE" % __import__("optuna").__version__ if suite_common.optuna_available()
                else "python3-optuna not installed: a seeded log-uniform random search instead")
    total = time.time() - started
    flags = "".join(f for f, on in ((" --quick", args.quick),
                                     (" --seeds " + ",".join(map(str, args.seed_list)),
                                      len(args.seed_list) > 1),
                                     (" --seed %d" % first, len(args.seed_list) == 1 and first != 1),
                                     (" --no-search", not args.search),
                                     (" --tasks " + args.tasks,
                                      args.tasks != ALL_TASKS))
                    if on)
    meta = ("Command: `/usr/bin/python3 bench/quality/run_quality_suite.py --build build%s`; "
            "%s; commit %s; %s; whole suite %.0f s wall." % (flags, when, commit, mach, total))
    text = meta + "\n\n" + ("Seed %d:\n\n" % first if len(args.seed_list) > 1 else "") + \
        table(rows, searcher, args.class_default)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    pngs = plot(runs, plots_dir)  # the first seed's runs
    print("plots: " + ", ".join(os.path.relpath(p) for p in pngs))
    if args.experiments:
        write_experiments(text)
    if len(args.seed_list) > 1:
        seeds_text = meta + "\n\n" + seeds_table(all_rows, args.seed_list)
        with open(os.path.join(args.out, "seeds.md"), "w") as f:
            f.write(seeds_text + "\n")
        print(seeds_text)
        if args.experiments:
            write_experiments(seeds_text, "quality-seeds")
    if args.search:
        done = meta + "\n\n" + done_when_table(all_rows, args.seed_list, args.class_default)
        with open(os.path.join(args.out, "done_when.md"), "w") as f:
            f.write(done + "\n")
        print(done)
        if args.experiments:
            write_experiments(done, "quality-done-when", "RESULTS.md")
    return 0 if all(ok for seed in args.seed_list
                    for _, _, ok, *_ in gate([r for r in all_rows if r["seed"] == seed],
                                             args.class_default)) else 1


if __name__ == "__main__":
    sys.exit(main())
