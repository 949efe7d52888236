#!/usr/bin/python3
"""Figures of the Sec. 6 experiments from run_experiments.py's CSVs.

  /usr/bin/python3 bench/experiments/plot_experiments.py [--results DIR] [--out DIR]

Writes (when the experiment's CSVs are present):
  exp_a_regret.png  experiment a: cumulative local regret BLReg(t), mean over
                    seeds (band: min..max), at the steps with exact metrics
  exp_a_loss.png    experiment a: prequential upper loss (class-balanced CE
                    on each step's fresh upper batch, before learning),
                    moving average, mean over seeds
  exp_b_loss.png    experiment b: prequential validation CE, moving average,
                    noise injections marked
  exp_b49_loss.png  the same for the 7x7-pooled run with SVRB
Needs Debian's python3-matplotlib and python3-numpy.
"""
import argparse
import csv
import glob
import os
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def load(results, exp):
    """{algorithm: [rows of each seed]} from <exp>_seed<k>_<alg>_metrics.csv."""
    runs = {}
    for path in sorted(glob.glob(os.path.join(results, f"{exp}_seed*_*_metrics.csv"))):
        m = re.match(rf"{exp}_seed(\d+)_(.+)_metrics\.csv$", os.path.basename(path))
        if not m:
            continue
        with open(path) as f:
            runs.setdefault(m.group(2), []).append(list(csv.DictReader(f)))
    return runs


def series(rows, key):
    t = np.array([int(r["t"]) for r in rows if r[key] != ""])
    v = np.array([float(r[key]) for r in rows if r[key] != ""])
    return t, v


def moving_average(v, w):
    if len(v) < w:
        return v
    c = np.cumsum(np.insert(v, 0, 0.0))
    out = (c[w:] - c[:-w]) / w
    return np.concatenate([np.cumsum(v[: w - 1]) / np.arange(1, w), out])


def plot_regret(runs, path):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for alg, seeds in runs.items():
        curves = [series(rows, "blreg") for rows in seeds]
        common = sorted(set.intersection(*[set(t.tolist()) for t, _ in curves]))
        if not common:
            continue
        vals = np.array([[dict(zip(t.tolist(), v))[s] for s in common] for t, v in curves])
        ax.plot(common, vals.mean(axis=0), label=alg)
        ax.fill_between(common, vals.min(axis=0), vals.max(axis=0), alpha=0.15)
    ax.set_yscale("log")
    ax.set_xlabel("time step t")
    ax.set_ylabel("BLReg(t), summed over every 20th step")
    ax.set_title("Parametric loss tuning, imbalanced drifting Fashion-MNIST")
    ax.legend(fontsize=8, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_loss(runs, path, title, window, marks=()):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for alg, seeds in runs.items():
        curves = [series(rows, "upper_loss_before") for rows in seeds]
        n = min(len(v) for _, v in curves)
        t = curves[0][0][:n]
        mean = np.mean([moving_average(v[:n], window) for _, v in curves], axis=0)
        ax.plot(t, mean, label=alg)
    for m in marks:
        ax.axvline(m, color="gray", linestyle=":", linewidth=1)
    ax.set_xlabel("time step t")
    ax.set_ylabel(f"prequential upper loss (moving average, {window} steps)")
    ax.set_title(title)
    ax.legend(fontsize=8, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--results", default=os.path.join(here, "results"))
    p.add_argument("--out", default=here)
    args = p.parse_args()
    a = load(args.results, "a")
    if a:
        plot_regret(a, os.path.join(args.out, "exp_a_regret.png"))
        steps = len(next(iter(a.values()))[0])
        plot_loss(a, os.path.join(args.out, "exp_a_loss.png"),
                  "Loss tuning: class-balanced validation CE (phases rho = 0.6 .. 0.9)", 20,
                  [steps // 4 * k + 1 for k in (1, 2, 3)])
    for exp, title in (("b", "Online HPO, d = 784: validation CE, label noise 5/10/15%"),
                       ("b49", "Online HPO, 7x7 pooled (d = 49): validation CE")):
        runs = load(args.results, exp)
        if runs:
            steps = len(next(iter(runs.values()))[0])
            plot_loss(runs, os.path.join(args.out, f"exp_{exp}_loss.png"), title,
                      max(10, steps // 40), [steps // 4 * k + 1 for k in (1, 2, 3)])


if __name__ == "__main__":
    main()
