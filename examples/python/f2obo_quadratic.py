#!/usr/bin/env python3
"""Drive f2obo from Python: create a session, stream steps, read the decision.

Install the package first (README, "Your own model, from Python": a venv
at ~/.venvs/f2obo, made from /usr/bin/python3 so it sees Debian's numpy
and grpc), start a server, then:

    ~/.venvs/f2obo/bin/python examples/python/f2obo_quadratic.py --server=127.0.0.1:50051

The problem is the `quadratic` family: g_t(x, y) = (mu/2)||y - (M x + c)||^2,
f_t(x, y) = (1/2)||y - d||^2, static, so the hypergradient is
grad F(x) = M^T (M x + c - d) and x_t must approach the least-squares
solution of M x = d - c.  The script checks that it does and exits non-zero
otherwise (tests/client/python/test_examples.py runs it).
"""
import argparse
import sys

import numpy as np

import f2obo


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default="127.0.0.1:50051")
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args(argv)

    client = f2obo.Client(args.server)
    # M = diag(1, 2) (d2 = d1 = 2), c = 0, d = (1, 1): the minimizer is x* = (1, 0.5).
    session = client.create_session(family="quadratic", x_dim=2, y_dim=2, mu=1.0,
                                    algorithm="f2obo", inner_steps=10, alpha=1.0, beta=0.5,
                                    gamma=0.1)
    print("created session", session.id, "algorithm", session.info().spec.algorithm)

    M = np.array([[1.0, 0.0], [0.0, 2.0]])
    steps = [({"d": [1.0, 1.0]}, {"m": M, "c": [0.0, 0.0]})] * args.steps
    for result in session.stream(steps):  # the bidirectional Steps stream, one reply per step
        pass
    print("t =", result.t, "x =", result.x, "lambda =", round(result.lambda_, 3))

    decision = session.decision()
    err = np.max(np.abs(decision.x - [1.0, 0.5]))
    print("decision at t =", decision.t, "x =", decision.x, "error", err)

    # A skipped index is refused with the expected one named.
    try:
        session.step({"d": [1.0, 1.0]}, {"m": M, "c": [0.0, 0.0]}, t=decision.t + 5)
        print("expected FailedPrecondition")
        return 1
    except f2obo.FailedPrecondition as e:
        print("skipped index refused:", e)

    session.delete()
    return 0 if err < 1e-3 and decision.t == args.steps + 1 else 1


if __name__ == "__main__":
    sys.exit(main())
