#!/usr/bin/python3
"""Figures of the simple bilevel experiments from run_simple_experiments.py's CSVs.

  /usr/bin/python3 bench/experiments/simple/plot_simple_experiments.py [--results DIR] [--out DIR]

Writes (when the experiment's CSVs are present):
  simple_linear_inverse.png  AGM-BiO's Fig. 2: g(x_k) - g* and |f(x_k) - f*|
                             against k (log-log), n = 3 and n = 100, with
                             Theorem 4.4's rates k^-4/3 and k^-2/3 for scale
  simple_regression.png      over-parameterized regression: inner gap
                             g(x_k) - g* and outer gap |f(x_k) - f*| against
                             steps and against the members' server-side
                             compute time (cumulative round_seconds)
Lines: the gaps of every served decision on the whole data, against the
exact optimum; markers: the server's own metrics (SimpleMetricsEvaluator)
of the same decisions, where it computed them.
Needs Debian's python3-matplotlib and python3-numpy.
"""
import argparse
import csv
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
COLORS = {"agm_bio": "tab:blue", "ir_scg": "tab:red", "ir_fscg": "tab:green"}


def load(path):
    if not os.path.exists(path):
        return None
    with open(path) as fh:
        return list(csv.DictReader(fh))


def col(rows, key, x="k"):
    """(x, value) over the rows where both are present and value > 0 (log axes)."""
    pts = [(float(r[x]), float(r[key])) for r in rows if r.get(key, "") != "" and r[x] != ""]
    pts = [(a, b) for a, b in pts if b > 0 and a > 0]
    if not pts:
        return np.array([]), np.array([])
    a, b = zip(*pts)
    return np.array(a), np.array(b)


def plot_linear_inverse(results, out):
    panels = []
    for n in (3, 100):
        curves = [
            (f"li{n}_orthant", "agm_bio", "AGM-BiO, Z = R^n_+, random x_0 (paper)", "-"),
            (f"li{n}_orthant_x0zero", "agm_bio", "AGM-BiO, Z = R^n_+, x_0 = 0", "--"),
            (f"li{n}_box", "ir_scg", "IR-SCG, Z = [0, 1]^n, random x_0", "-"),
            (f"li{n}_box", "ir_fscg", "IR-FSCG, Z = [0, 1]^n, random x_0", "-"),
        ]
        loaded = [(load(os.path.join(results, f"linear_inverse_{g}_{m}.csv")), m, lab, ls)
                  for g, m, lab, ls in curves]
        if all(rows is None for rows, *_ in loaded):
            continue
        panels.append((n, loaded))
    if not panels:
        return False
    fig, axes = plt.subplots(len(panels), 2, figsize=(11, 4.2 * len(panels)), squeeze=False)
    for row, (n, loaded) in enumerate(panels):
        for c, (key, srv_key, title, rate) in enumerate([
                ("g_gap", "srv_inner_gap", "infeasibility g(x_k) - g*", -4.0 / 3.0),
                ("abs_f_gap", "srv_outer_gap", "suboptimality |f(x_k) - f*|", -2.0 / 3.0)]):
            ax = axes[row][c]
            for rows, member, label, ls in loaded:
                if rows is None:
                    continue
                k, v = col(rows, key)
                ax.loglog(k, v, ls, color=COLORS[member], label=label, lw=1.3)
                if ls == "-" and member == "agm_bio":
                    ks, vs = col(rows, srv_key)
                    vs = np.abs(vs)
                    ax.loglog(ks, vs, "o", ms=3.5, mfc="none", color="k",
                              label="server's metrics (every 10th step)")
            # Theorem 4.4 (r = 2) for scale, anchored at the paper's run at k = 100.
            ref = next((r for r, m, _, ls in loaded if r is not None and m == "agm_bio"), None)
            if ref is not None:
                kk, vv = col(ref, key)
                if len(kk):
                    i = np.searchsorted(kk, 100)
                    i = min(i, len(kk) - 1)
                    grid = np.geomspace(10, kk.max(), 50)
                    ax.loglog(grid, 3 * vv[i] * (grid / kk[i]) ** rate, ":", color="gray",
                              label=f"k^{'-4/3' if c == 0 else '-2/3'} (Theorem 4.4)")
            ax.set_title(f"n = {n}: {title}")
            ax.set_xlabel("k (steps, one row each)")
            ax.grid(True, which="both", alpha=0.3)
            if row == 0:
                ax.legend(fontsize=7.5, loc="lower left")
    fig.suptitle("Linear inverse problem (AGM-BiO paper, Sec. 5 / Fig. 2): "
                 "f = ||x||^2/2, g = (1^T x - 1)^2/2, K = 1000", fontsize=11)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "simple_linear_inverse.png"), dpi=110)
    plt.close(fig)
    return True


def plot_regression(results, out):
    members = [("ir_scg", "IR-SCG (varsigma = 10)", "-"),
               ("ir_fscg", "IR-FSCG (varsigma = 10)", "-"),
               ("agm_bio", "AGM-BiO (gamma = 0.01)", "-"),
               ("ir_scg_s01", "IR-SCG, varsigma = 0.1", "--"),
               ("ir_fscg_s01", "IR-FSCG, varsigma = 0.1", "--")]
    runs = {m: load(os.path.join(results, f"regression_reg_{m}.csv")) for m, _, _ in members}
    if all(v is None for v in runs.values()):
        return False
    fig, axes = plt.subplots(2, 2, figsize=(11, 8.4))
    for r, (xkey, xlabel) in enumerate([("k", "steps (4 training + 16 validation rows each)"),
                                        ("seconds", "server-side compute time (s, cumulative "
                                                    "round_seconds)")]):
        for c, (key, srv_key, title) in enumerate([
                ("inner_gap", "srv_inner_gap", "inner gap g(x_k) - g*"),
                ("abs_outer_gap", None, "outer gap |f(x_k) - f*|")]):
            ax = axes[r][c]
            for m, label, ls in members:
                rows = runs[m]
                if rows is None:
                    continue
                color = COLORS[m.split("_s01")[0]]
                x, v = col(rows, key, xkey)
                ax.loglog(x, v, ls, color=color, label=label, lw=1.2)
                if srv_key and xkey == "k" and ls == "-":
                    xs, vs = col(rows, srv_key, xkey)
                    ax.loglog(xs, vs, "o", ms=3, mfc="none", color=color)
            ax.set_title(title + (" (o: the server's metrics)" if srv_key and xkey == "k"
                                  else ""))
            ax.set_xlabel(xlabel)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7.5, loc="lower left")
    fig.suptitle("Over-parameterized regression on an l1 ball (diabetes, degree-2 features, "
                 "d = 65, 32 training / 128 validation rows)", fontsize=11)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "simple_regression.png"), dpi=110)
    plt.close(fig)
    return True


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--results", default=os.path.join(HERE, "results"))
    p.add_argument("--out", default=HERE)
    args = p.parse_args()
    for name, fn in (("simple_linear_inverse.png", plot_linear_inverse),
                     ("simple_regression.png", plot_regression)):
        if fn(args.results, args.out):
            print(f"wrote {os.path.join(args.out, name)}")


if __name__ == "__main__":
    main()
