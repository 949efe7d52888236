"""Oracle sessions of the multi-task and simple bilevel classes from Python:
a multitask_oracle session (mt_f2obo) whose per-task
derivatives this test computes in numpy follows the built-in
multitask_logistic_hpo session, and a simple_oracle session (ir_scg)
answered with least squares in numpy follows the built-in least_squares
session, both to 1e-12; the reply carries each task's y_i.
"""
import numpy as np

import f2obo
from helpers import batches, classification_data
from test_oracle_e2e import C, D, STEPS, logistic_hpo

M = 4  # tasks
TASK_COMMON = dict(algorithm="mt_f2obo", box=(0.0, 0.1), seed=9, alpha=0.1, beta=0.5,
                   gamma=0.01, inner_steps=3, tasks=M)


def step_tasks(t):
    """Step t's two tasks: (task, upper, inner) each."""
    a, b = STEPS[t % len(STEPS)], STEPS[(t + 3) % len(STEPS)]
    return [(t % M, a[0], a[1]), ((t + 1) % M, b[0], b[1])]


def test_multitask_oracle_follows_the_built_in_session(start_server):
    server = start_server()
    with f2obo.Client(server.address) as client:
        ref = client.create_session(family="multitask_logistic_hpo", features=D, classes=C,
                                    exact_every=0, **TASK_COMMON)
        oracle = client.create_session(family="multitask_oracle", x_dim=D, y_dim=D * C + C,
                                       **TASK_COMMON)
        with f2obo.OracleStream(client, oracle.id) as stream:
            for t in range(8):
                tasks = step_tasks(t)
                expected = ref.step(tasks=[{"task": k, "upper": u, "inner": i}
                                           for k, u, i in tasks])

                def evaluate(q, tasks=tasks):
                    (_, upper, inner), = [k for k in tasks if k[0] == q.task]
                    A, labels = upper if q.function == "f" else inner
                    if q.rows is not None:
                        A, labels = A[q.rows], labels[q.rows]
                    return logistic_hpo(q.function, q.x, q.y, A, labels, q.want_grad_x,
                                        q.want_grad_y)
                got = stream.step(evaluate, tasks=[(k, len(u[1]), len(i[1]))
                                                   for k, u, i in tasks])
                assert got.t == expected.t
                np.testing.assert_allclose(got.x, expected.x, rtol=0, atol=1e-12)
                assert abs(got.upper_loss_before - expected.upper_loss_before) <= 1e-12
                # each task's y_i came with the reply, one per task of the step
                assert [len(y) for y in stream.y] == [D * C + C] * 2
                assert not np.array_equal(stream.y[0], stream.y[1])


F = 8  # simple bilevel: features
SIMPLE_COMMON = dict(algorithm="ir_scg", box=(-1.0, 1.0), seed=3)
X, T = classification_data(rows=400, features=F, classes=2, seed=6)
SIMPLE_STEPS = batches(X, T.astype(np.float64) + 0.1 * X[:, 0], rows_per_step=24, steps=10,
                       seed=7)


def least_squares(x, A, b, want_gx):
    """(1/2n) ||A x - b||^2 and its gradient (core/simple/families/least_squares.cc)."""
    r = A @ x - b
    return 0.5 * (r @ r) / len(b), (A.T @ r) / len(b) if want_gx else None


def test_simple_oracle_follows_the_built_in_session(start_server):
    server = start_server()
    with f2obo.Client(server.address) as client:
        ref = client.create_session(family="least_squares", features=F, exact_every=0,
                                    **SIMPLE_COMMON)
        oracle = client.create_session(family="simple_oracle", x_dim=F, **SIMPLE_COMMON)
        with f2obo.OracleStream(client, oracle.id) as stream:
            for upper, inner in SIMPLE_STEPS:
                expected = ref.step(upper=upper, inner=inner)

                def evaluate(q, upper=upper, inner=inner):
                    assert q.y is None and not q.want_grad_y and q.task is None
                    A, b = upper if q.function == "f" else inner
                    if q.rows is not None:
                        A, b = A[q.rows], b[q.rows]
                    value, gx = least_squares(q.x, A, b, q.want_grad_x)
                    return value, gx, None
                got = stream.step(evaluate, upper_rows=len(upper[1]), inner_rows=len(inner[1]))
                assert got.t == expected.t
                np.testing.assert_allclose(got.x, expected.x, rtol=0, atol=1e-12)
                assert stream.y == []  # x alone in this class
        a, b = oracle.decision(), ref.decision()
        np.testing.assert_allclose(a.iterate, b.iterate, rtol=0, atol=1e-12)


def test_ir_scg_asks_a_step_in_one_request_and_only_what_it_reads(start_server):
    # Giang-Tran et al. Alg. 1: f and g at x_k and x_{k-1} (STORM) and at
    # the decision (the prequential losses) are independent: one request.
    server = start_server()
    with f2obo.Client(server.address) as client:
        oracle = client.create_session(family="simple_oracle", x_dim=F, **SIMPLE_COMMON)
        with f2obo.OracleStream(client, oracle.id) as stream:
            for k, (upper, inner) in enumerate(SIMPLE_STEPS[:3]):
                requests = []

                def evaluate_many(qs, upper=upper, inner=inner):
                    requests.append(sorted((q.function, q.want_value, q.want_grad_x)
                                           for q in qs))
                    out = []
                    for q in qs:
                        A, b = upper if q.function == "f" else inner
                        value, gx = least_squares(q.x, A, b, q.want_grad_x)
                        out.append((value if q.want_value else None, gx, None))
                    return out
                stream.step(evaluate_many=evaluate_many, upper_rows=len(upper[1]),
                            inner_rows=len(inner[1]))
                # (function, value, gradient): f's gradient at x_k (and x_{k-1}),
                # f at the decision; g's value and gradient at x_k (its value is
                # the report's inner loss), gradient at x_{k-1}, value at the decision
                at_x = [("f", False, True), ("f", True, False), ("g", True, False),
                        ("g", True, True)]
                at_prev = [("f", False, True), ("g", False, True)] if k > 0 else []
                assert requests == [sorted(at_x + at_prev)], k
