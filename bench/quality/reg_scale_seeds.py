"""IR-FSCG / IR-SCG's regularization scale varsigma over seeds on the
quality suite's simple task (bench/EXPERIMENTS.md, "Defaults that
work on real streams", section 11): per seed and scale, the distance
(g - g*) + |f - f*| to the bilevel optimum after --steps steps, and
sqrt(L_g / L_f), the scale Theorem 3's two terms balance at.

    /usr/bin/python3 bench/quality/reg_scale_seeds.py --build build --seeds 1,2,3,4,5 \
        --scales 10,3,1,0.3
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np

Q = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, Q)
sys.path.insert(0, os.path.join(Q, "..", "experiments", "simple"))
import suite_common
from run_simple_experiments import cyclic_steps, exact_regression_fstar, regression_data
ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--seeds", default="1,2,3"); ap.add_argument("--scales", default="10,1")
ap.add_argument("--algorithms", default="ir_fscg"); ap.add_argument("--steps", type=int, default=4096)
a = ap.parse_args()
sys.path.insert(0, os.path.join(a.build, "python"))
import f2obo
server = suite_common.Server(os.path.abspath(a.build), tempfile.mkdtemp(), 0)
client = f2obo.Client(server.target)
try:
    for seed in map(int, a.seeds.split(",")):
        At, bt, Av, bv, Ae, be = regression_data(seed)
        ref = exact_regression_fstar(Av, bv, At, bt, 2.0)
        fs, delta = ref["f_star"], ref["delta"]
        lg = np.linalg.eigvalsh(At.T @ At / len(bt)).max(); lf = np.linalg.eigvalsh(Av.T @ Av / len(bv)).max()
        up = cyclic_steps(Av, bv, 16, a.steps); inn = cyclic_steps(At, bt, 4, a.steps)
        for alg in a.algorithms.split(","):
            for sc in a.scales.split(","):
                spec = dict(problem_class="simple_bilevel", features=At.shape[1], l1_ball={"radius": delta}, seed=seed)
                if sc != "default": spec["reg_scale"] = float(sc)
                s = client.create_session("least_squares", alg, **spec)
                t0 = time.time()
                for t in range(a.steps): s.step(up[t], inn[t])
                x = np.asarray(s.decision().x); client.delete_session(s.id)
                g = 0.5 * np.mean((At @ x - bt) ** 2); f = 0.5 * np.mean((Av @ x - bv) ** 2)
                print("seed %d %s scale %s: loss %.4g (gap %.3g, f-f* %+.3g)  sqrt(Lg/Lf) %.3g  %.0fs" % (
                    seed, alg, sc, g + abs(f - fs), g, f - fs, np.sqrt(lg / lf), time.time() - t0), flush=True)
finally:
    server.stop()
