#!/usr/bin/python3
"""af2obo's server CPU against sf2obo's at equal result: one default pass
of each over the quality suite's digits_l2 stream (task_bilevel.py's data,
narrow box [0, 0.1], 1,000 steps of 32 rows), printing the held-out
cross-entropy and the server's CPU seconds (suite_common.server_cpu).
Pass several --build directories to alternate binaries in one run (an A/B
on a shared machine).

    /usr/bin/python3 bench/quality/af2obo_cpu.py --build build --seeds 1,2
"""
import argparse
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", action="append", default=[])
    ap.add_argument("--seeds", default="1")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--algorithms", default="sf2obo,af2obo")
    ap.add_argument("--reps", type=int, default=1)
    a = ap.parse_args()
    builds = a.build or ["build"]
    sys.path.insert(0, os.path.join(os.path.abspath(builds[0]), "python"))
    import f2obo  # noqa: E402
    import suite_common  # noqa: E402
    import task_bilevel  # noqa: E402
    for rep in range(a.reps):
        for build in builds:
            server = suite_common.Server(os.path.abspath(build), tempfile.mkdtemp(), 0)
            suite_common.SERVER_PID = server.proc.pid
            client = f2obo.Client(server.target)
            try:
                for seed in [int(s) for s in a.seeds.split(",")]:
                    (a_tr, l_tr), (a_va, l_va), (a_te, l_te) = task_bilevel.digits_l2_data(seed)

                    def batch_at(t, per=32):
                        i = np.arange(t * per, (t + 1) * per)
                        return ((a_va[i % len(l_va)], l_va[i % len(l_va)]),
                                (a_tr[i % len(l_tr)], l_tr[i % len(l_tr)]))

                    def score(dec):
                        ce, hit = suite_common.cross_entropy(np.asarray(dec.y), a_te, l_te,
                                                             task_bilevel.CLASSES)
                        return float(ce.mean()), float(hit.mean())

                    spec = dict(family="logistic_hpo", features=a_tr.shape[1],
                                classes=task_bilevel.CLASSES, box=(0.0, 0.1), seed=seed)
                    for alg in a.algorithms.split(","):
                        r = suite_common.run_session(client, f2obo, "digits_l2", "default", alg,
                                                     spec, a.steps, batch_at, score)
                        print("%s rep %d seed %d %s: held-out CE %.5f, server CPU %.2f s%s" % (
                            build, rep + 1, seed, alg, r.final, r.cpu,
                            "" if r.error is None else ", " + r.error), flush=True)
            finally:
                client.close()
                server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
