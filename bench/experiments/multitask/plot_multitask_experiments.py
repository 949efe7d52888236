#!/usr/bin/python3
"""Plots of run_multitask_experiments.py's CSVs (bench/EXPERIMENTS.md,
"Multi-task HPO").  For each algorithm the member settings (x step size,
options) with the lowest final F (the worse of the two streams) are drawn
solid, the others thin.

  multitask_hpo.png       F(x_t) against samples (rows sent) and against the
                          session's cumulative server round time
  multitask_hpo_x.png     mean x on the pixel and on the noise features
Usage: plot_multitask_experiments.py [--results DIR] [--out DIR]
"""
import argparse
import csv
import glob
import os
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
COLORS = {"rsvrb": "#2563eb", "mt_f2obo": "#dc2626"}
STYLES = {"sampled": "-", "all": "--"}
LABELS = {"sampled": "5 of 45 tasks per step", "all": "all 45 tasks every step"}


def load(results):
    runs = {}
    for path in sorted(glob.glob(os.path.join(results, "multitask_*_*.csv"))):
        m = re.fullmatch(r"multitask_(sampled|all)_(rsvrb|mt_f2obo)((?:_[a-z]+[0-9p]+)*)"
                         r"_g([0-9p]+)\.csv", os.path.basename(path))
        if not m:
            continue
        with open(path) as fh:
            rows = [{k: float(v) if v != "" else None for k, v in r.items()}
                    for r in csv.DictReader(fh)]
        # e.g. "mom0.99 gamma 0.001": the member's options (run_multitask_experiments.py)
        cfg = " ".join(v.replace("p", ".") for v in m.group(3).split("_") if v)
        cfg = (cfg + " " if cfg else "") + "gamma " + m.group(4).replace("p", ".")
        runs[(m.group(1), m.group(2), cfg)] = rows
    return runs


def best_gamma(runs, algorithm):
    """The member settings whose worse final F over the two streams is lowest."""
    finals = {}
    for (stream, alg, g), rows in runs.items():
        if alg == algorithm:
            finals[g] = max(finals.get(g, 0.0), rows[-1]["F"])
    return min(finals, key=finals.get)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--results", default=os.path.join(HERE, "results"))
    p.add_argument("--out", default=HERE)
    a = p.parse_args()
    runs = load(a.results)
    best = {alg: best_gamma(runs, alg) for alg in COLORS}
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    for (stream, alg, g), rows in sorted(runs.items()):
        solid = g == best[alg]
        kw = dict(color=COLORS[alg], linestyle=STYLES[stream], lw=2.0 if solid else 0.7,
                  alpha=1.0 if solid else 0.45,
                  label=f"{alg} ({LABELS[stream]}), {g}" if solid else None)
        axes[0].plot([r["samples"] for r in rows], [r["F"] for r in rows], **kw)
        axes[1].plot([r["seconds"] for r in rows], [r["F"] for r in rows], **kw)
    axes[0].set_xlabel("samples (training + validation rows sent)")
    axes[1].set_xlabel("server round time of the session (s)")
    for ax in axes:
        ax.set_ylabel("F(x_t): mean validation loss at y_i*(x_t)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("Multi-task HPO (RSVRB paper App. E.2 on digits class pairs, m = 45): "
                 "thin lines = the other step sizes tried")
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "multitask_hpo.png"), dpi=110)

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), sharey=True)
    for (stream, alg, g), rows in sorted(runs.items()):
        if g != best[alg]:
            continue
        for ax, key, what in ((axes[0], "x_pixels", "pixel features"),
                              (axes[1], "x_noise", "noise features")):
            ax.plot([r["samples"] for r in rows], [r[key] for r in rows], color=COLORS[alg],
                    linestyle=STYLES[stream], label=f"{alg} ({LABELS[stream]}), {g}")
            ax.set_title(f"mean L2 coefficient x_f on the {what}")
            ax.set_xlabel("samples (rows sent)")
            ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "multitask_hpo_x.png"), dpi=110)
    print("best step sizes:", best)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
