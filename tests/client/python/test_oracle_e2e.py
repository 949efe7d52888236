"""Oracle sessions from Python: a session of family "oracle"
whose derivatives this test computes in numpy (logistic_hpo's math, as a
user's own model would) follows the built-in logistic_hpo session on the
same stream to 1e-12, for every algorithm an oracle family serves; a
process that dies mid-round leaves the session unchanged and a new client
resumes from the server's iterates.
"""
import numpy as np
import pytest

import f2obo
from helpers import batches, classification_data

D, C, MU0 = 6, 3, 1e-3
X, Y = classification_data(rows=600, features=D, classes=C, seed=3)
STEPS = batches(X, Y, rows_per_step=64, steps=10, seed=4)
COMMON = dict(algorithm="f2obo", box=(0.0, 0.1), seed=9, alpha=0.1, beta=0.5, gamma=0.01)


def logistic_hpo(function, x, y, A, labels, want_gx, want_gy):
    """logistic_hpo's f (function "f") or g ("g") and gradients in numpy
    (core/bilevel/families/logistic_hpo.h): y = (W feature-major d x C, b)."""
    W = y[:D * C].reshape(D, C)
    b = y[D * C:]
    z = A @ W + b
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    n = len(labels)
    value = -logp[np.arange(n), labels].mean()
    r = np.exp(logp)
    r[np.arange(n), labels] -= 1.0
    r /= n
    gy = np.concatenate([(A.T @ r).reshape(-1), r.sum(axis=0)]) if want_gy else None
    gx = np.zeros(D) if want_gx else None
    if function == "g":
        value += 0.5 * MU0 * y @ y + 0.5 * (x * (W * W).sum(axis=1)).sum()
        if want_gy:
            gy += MU0 * y
            gy[:D * C] += (x[:, None] * W).reshape(-1)
        if want_gx:
            gx = 0.5 * (W * W).sum(axis=1)
    return value, gx, gy


def evaluator(step):
    (Xu, yu), (Xi, yi) = step

    def evaluate(q):
        A, labels = (Xu, yu) if q.function == "f" else (Xi, yi)
        if q.rows is not None:
            A, labels = A[q.rows], labels[q.rows]
        return logistic_hpo(q.function, q.x, q.y, A, labels, q.want_grad_x, q.want_grad_y)
    return evaluate


def create_pair(client, algorithm):
    ref = client.create_session(family="logistic_hpo", features=D, classes=C, exact_every=0,
                                **dict(COMMON, algorithm=algorithm))
    info = client.create_session(family="oracle", x_dim=D, y_dim=D * C + C,
                                 **dict(COMMON, algorithm=algorithm))
    return ref, info


@pytest.mark.parametrize("algorithm", ["f2obo", "f2obo_sl", "af2obo", "sf2obo"])
def test_numpy_oracle_follows_the_built_in_session(start_server, algorithm):
    server = start_server()
    with f2obo.Client(server.address) as client:
        ref, oracle = create_pair(client, algorithm)
        with f2obo.OracleStream(client, oracle.id) as stream:
            for (upper, inner) in STEPS:
                expected = ref.step(upper=upper, inner=inner)
                got = stream.step(evaluator((upper, inner)), upper_rows=len(upper[1]),
                                  inner_rows=len(inner[1]))
                assert got.t == expected.t
                np.testing.assert_allclose(got.x, expected.x, rtol=0, atol=1e-12)
                assert abs(got.upper_loss_before - expected.upper_loss_before) <= 1e-12
                # y_{t+1} came with the reply, the session's own
                assert len(stream.y) == 1
                np.testing.assert_array_equal(stream.y[0], oracle.decision().y)
        a, b = oracle.decision(), ref.decision()
        assert a.t == b.t == len(STEPS) + 1
        np.testing.assert_allclose(a.y, b.y, rtol=0, atol=1e-12)


def test_a_client_that_dies_mid_round_changes_nothing_and_a_new_one_resumes(start_server):
    server = start_server()
    with f2obo.Client(server.address) as client:
        ref, oracle = create_pair(client, "f2obo")
        for (upper, inner) in STEPS[:4]:
            ref.step(upper=upper, inner=inner)
        with f2obo.OracleStream(client, oracle.id) as stream:
            for step in STEPS[:3]:
                stream.step(evaluator(step), upper_rows=32, inner_rows=32)
            before = oracle.decision()
            asked = []

            def dies(q):
                asked.append(q)
                if len(asked) > 4:
                    raise KeyboardInterrupt("the process died")
                return evaluator(STEPS[3])(q)
            with pytest.raises(KeyboardInterrupt):
                stream.step(dies, upper_rows=32, inner_rows=32)
        after = oracle.decision()
        assert after.t == before.t == 4
        np.testing.assert_array_equal(after.x, before.x)
        np.testing.assert_array_equal(after.y, before.y)
        # A new client (another process would do the same) resumes at t = 4.
        with f2obo.Client(server.address) as other:
            with f2obo.OracleStream(other, oracle.id) as stream:
                got = stream.step(evaluator(STEPS[3]), upper_rows=32, inner_rows=32)
        assert got.t == 4
        np.testing.assert_allclose(got.x, ref.decision().x, rtol=0, atol=1e-12)


def test_wrong_size_answer_is_invalid_argument_naming_the_field(start_server):
    server = start_server()
    with f2obo.Client(server.address) as client:
        _, oracle = create_pair(client, "f2obo")

        def short(q):
            value, gx, gy = evaluator(STEPS[0])(q)
            return value, gx, None if gy is None else gy[:-1]
        with f2obo.OracleStream(client, oracle.id) as stream:
            with pytest.raises(f2obo.InvalidArgument, match=r"grad_y: 160 bytes, expected 21"):
                stream.step(short, upper_rows=32, inner_rows=32)
            got = stream.step(evaluator(STEPS[0]), upper_rows=32, inner_rows=32)
        assert got.t == 1


def test_a_nan_answer_is_reported_once_naming_the_step_the_function_and_the_entry(
        start_server):
    server = start_server()
    with f2obo.Client(server.address) as client:
        _, oracle = create_pair(client, "f2obo")

        def nan_in_g(q):
            value, gx, gy = evaluator(STEPS[0])(q)
            if gy is not None and q.function == "g":
                gy = gy.copy()
                gy[3] = np.nan
            return value, gx, gy
        with f2obo.OracleStream(client, oracle.id) as stream:
            with pytest.raises(f2obo.InvalidArgument) as e:
                stream.step(nan_in_g, upper_rows=32, inner_rows=32)
            message = str(e.value)
            assert message.startswith("step 1: answers[") and message.count("step 1") == 1, \
                message
            assert "].grad_y[3]: nan is not finite (g's gradient in y (query " in message
            assert oracle.info().next_t == 1
