#!/usr/bin/python3
"""The quality suite (issue 29): is a user's model better with the online
tuner's defaults than with the hyperparameters they would have picked, and
at what cost?  One command, every problem class, offline data:

    /usr/bin/python3 bench/quality/run_quality_suite.py --build build

Tasks (bench/quality/task_*.py): per-feature L2 HPO on digits and loss
tuning under an imbalance drift (bilevel class), the over-parameterized
diabetes regression on an l1 ball (simple class), multi-task HPO on the 45
digits class pairs (multi-task class).  Per task: each algorithm of the
class at its defaults, the untuned start, the best fixed hyperparameter in
hindsight (a grid of full passes, chosen on the held-out rows: an oracle),
and Optuna's TPE (python3-optuna; a random search if it is missing, and
the table says so) given the compute of f2obo's default pass.

Writes bench/quality/results/{suite.csv,table.md,meta.txt}, the PNGs
bench/quality/quality_*.png, and (with --experiments) the table into
bench/EXPERIMENTS.md between the "quality-suite" markers.  --seeds 1,2,3
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


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--quick", action="store_true", help="short streams (a smoke run)")
    ap.add_argument("--tasks", default="digits_l2,loss_tuning,simple,multitask")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seeds", default=None,
                    help="comma-separated seeds (default: --seed only); adds a mean/spread table")
    ap.add_argument("--no-search", dest="search", action="store_false",
                    help="skip the grid and Optuna baselines")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--experiments", action="store_true",
                    help="write the table into bench/EXPERIMENTS.md")
    args = ap.parse_args()
    args.seed_list = [int(v) for v in (args.seeds or str(args.seed)).split(",")]
    scale = 4 if args.quick else 1
    args.steps = 1000 // scale
    args.simple_steps = 4096 // scale
    args.mt_steps = 300 // scale
    return args


def fmt(v, digits=4):
    if v is None:
        return "-"
    if isinstance(v, float):
        return "%.*g" % (digits, v)
    return str(v)


def table(rows, searcher):
    lines = ["| task | method | algorithm | held-out loss | acc | vs untuned | vs best fixed | "
             "wall s | passes | note |", "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    by_task = {}
    for r in rows:
        by_task.setdefault(r["task"], []).append(r)
    for task, rs in by_task.items():
        def ref(method, r):
            # The same algorithm's search if it has one, else the task's.
            same = [q for q in rs if q["method"] == method and q["algorithm"] == r["algorithm"]]
            alls = [q for q in rs if q["method"] == method]
            return (same or alls or [{"loss": None}])[0]["loss"]

        for r in rs:
            base, grid = ref("untuned", r), ref("grid", r)
            note = r.get("error") or ""
            if r.get("chosen") is not None:
                note = ("chosen %s of %d trials; " % (fmt(r["chosen"], 3), r["trials"])) + note
            if r.get("note"):
                note += r["note"]
            rel = lambda ref: "-" if ref is None else "%+.1f%%" % (100 * (r["loss"] / ref - 1))
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %.1f | %s | %s |" % (
                task, r["method"], r["algorithm"], fmt(r["loss"]), fmt(r["acc"], 3), rel(base),
                rel(grid), r["seconds"], fmt(r["passes"], 3), note.strip("; ")))
    lines.append("")
    lines.append(verdict(rows))
    lines.append("")
    lines.append("Loss: held-out (test rows no run saw); \"vs\": relative to the untuned start "
                 "and to the best fixed hyperparameter in hindsight (negative = better). "
                 "Search at equal compute: %s." % searcher)
    return "\n".join(lines)


def gate(rows):
    """Issue 29's "done when" per bilevel task: f2obo's default run beats the
    untuned start and ends within 2% of the best fixed hyperparameter in
    hindsight (or better) with at most 1/10 of the grid's passes."""
    out = []
    for task in sorted({r["task"] for r in rows}):
        rs = {(r["method"], r["algorithm"]): r for r in rows if r["task"] == task}
        d, u = rs.get(("default", "f2obo")), rs.get(("untuned", "f2obo"))
        g = rs.get(("grid", "f2obo"))
        if d is None or u is None or g is None:
            continue
        ok = (d["loss"] < u["loss"] and d["loss"] <= 1.02 * g["loss"]
              and d["passes"] <= g["passes"] / 10.0)
        out.append((task, ok, d["loss"], u["loss"], g["loss"], g["passes"]))
    return out


def verdict(rows):
    parts = ["%s %s (%.4g vs untuned %.4g, best fixed %.4g of %d passes)"
             % (task, "met" if ok else "NOT met", d, u, g, p)
             for task, ok, d, u, g, p in gate(rows)]
    return "Issue 29's bar for f2obo's defaults: " + ("; ".join(parts) or "no bilevel task run") + "."


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
        if task.startswith("simple"):  # a distance to the bilevel optimum, over decades
            ax.set_ylabel("(g - g*) + |f - f*|")
            ax.set_yscale("log")
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
    def untuned_of(r):
        same = [q for q in rows if q["seed"] == r["seed"] and q["task"] == r["task"] and
                q["method"] == "untuned" and q["algorithm"] == r["algorithm"]]
        alls = [q for q in rows if q["seed"] == r["seed"] and q["task"] == r["task"] and
                q["method"] == "untuned"]
        return (same or alls or [None])[0]

    lines = ["| task | method | algorithm | seeds | held-out loss: mean | sd | min - max | acc | "
             "vs untuned: mean | better in | wall s |",
             "|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|"]
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
            u = untuned_of(r)
            if u is not None and u is not r and np.isfinite(r["loss"]):
                rel.append(r["loss"] / u["loss"] - 1)
                better += r["loss"] < u["loss"]
        lines.append("| %s | %s | %s | %d | %s | %s | %s - %s | %s | %s | %s | %.1f |" % (
            k[0], k[1], k[2], len(rs), fmt(float(loss.mean())),
            fmt(float(loss.std(ddof=1))) if len(rs) > 1 else "-", fmt(float(loss.min())),
            fmt(float(loss.max())), fmt(float(np.mean(accs)), 3) if accs else "-",
            "%+.1f%%" % (100 * np.mean(rel)) if rel else "-",
            "%d of %d" % (better, len(rel)) if rel else "-",
            float(np.mean([r["seconds"] for r in rs]))))
    lines.append("")
    lines.append("Seeds %s. \"vs untuned\": against the same algorithm's untuned start of the same "
                 "seed where the suite runs one (af2obo), else the task's (f2obo's for the bilevel "
                 "tasks); sd: sample standard deviation over the seeds." % ", ".join(str(v) for v in seeds))
    return "\n".join(lines)


def write_experiments(text, marker="quality-suite"):
    path = os.path.join(HERE, "..", "EXPERIMENTS.md")
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
    os.makedirs(args.out, exist_ok=True)
    started = time.time()
    when = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")
    mach = machine()
    commit = subprocess.run(["git", "-C", HERE, "describe", "--always", "--dirty"],
                            capture_output=True, text=True).stdout.strip()
    workdir = tempfile.mkdtemp(prefix="f2obo_suite_")
    server = suite_common.Server(os.path.abspath(args.build), workdir, 0)
    runs, all_rows = [], []
    try:
        client = f2obo.Client(server.target)
        for seed in args.seed_list:
            args.seed = seed
            seed_runs = []
            for name in args.tasks.split(","):
                t0 = time.time()
                if name == "digits_l2":
                    import task_bilevel
                    seed_runs += task_bilevel.digits_l2(client, f2obo, args,
                                                        ["f2obo", "sf2obo", "af2obo"])
                elif name == "loss_tuning":
                    import task_bilevel
                    seed_runs += task_bilevel.loss_tuning(client, f2obo, args,
                                                          ["f2obo", "sf2obo", "af2obo"])
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
    keys = ["seed", "task", "method", "algorithm", "loss", "acc", "seconds", "passes", "chosen",
            "trials", "error", "note"]
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
                                      args.tasks != "digits_l2,loss_tuning,simple,multitask"))
                    if on)
    meta = ("Command: `/usr/bin/python3 bench/quality/run_quality_suite.py --build build%s`; "
            "%s; commit %s; %s; whole suite %.0f s wall." % (flags, when, commit, mach, total))
    text = meta + "\n\n" + ("Seed %d:\n\n" % first if len(args.seed_list) > 1 else "") + \
        table(rows, searcher)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    if len(args.seed_list) > 1:
        seeds_text = meta + "\n\n" + seeds_table(all_rows, args.seed_list)
        with open(os.path.join(args.out, "seeds.md"), "w") as f:
            f.write(seeds_text + "\n")
        print(seeds_text)
        if args.experiments:
            write_experiments(seeds_text, "quality-seeds")
    else:
        pngs = plot(runs, HERE)
        print("plots: " + ", ".join(os.path.relpath(p) for p in pngs))
        if args.experiments:
            write_experiments(text)
    return 0 if all(ok for seed in args.seed_list
                    for _, ok, *_ in gate([r for r in all_rows if r["seed"] == seed])) else 1


if __name__ == "__main__":
    sys.exit(main())
