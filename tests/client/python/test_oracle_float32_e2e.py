"""The float32 wire (OracleStepOpen.float32) over a real server: answers
sent as float32 are widened exactly by the server, so a float32 stream's
trajectory is the float64 stream's with every gradient rounded to float32
(bit for bit when the server sums f's and g's parts itself), and within
that rounding's reach of the float64 trajectory with the recipe protocol;
wrong sizes, the wrong field for the stream's wire and non-finite numbers
are refused naming the field and change nothing; f2obo.torch sends a
float32 module's gradients as float32 (half the bytes up) unless told not
to.
"""
import numpy as np
import pytest
import torch

import f2obo
import f2obo.torch
from test_oracle_e2e import COMMON, D, C, STEPS, create_pair, evaluator

U = 2.0 ** -24  # float32's unit roundoff (round to nearest)


def rounded(evaluate):
    """`evaluate` with its gradients rounded to float32 (then widened)."""
    def rounded_evaluate(q):
        value, gx, gy = evaluate(q)
        r = [None if g is None else g.astype(np.float32).astype(np.float64) for g in (gx, gy)]
        return value, r[0], r[1]
    return rounded_evaluate


def run(client, session_id, float32, recipes, evaluate_of=evaluator):
    with f2obo.OracleStream(client, session_id) as stream:
        stream.float32, stream.recipes = float32, recipes
        for (upper, inner) in STEPS:
            stream.step(evaluate_of((upper, inner)), upper_rows=len(upper[1]),
                        inner_rows=len(inner[1]))
        return dict(stream.stats)


def session(client, algorithm="f2obo"):
    # A loaded machine's first connection can outlast gRPC's handshake
    # timeout: wait for the channel before the first call.
    client.wait_ready(120)
    return client.create_session(family="oracle", x_dim=D, y_dim=D * C + C,
                                 **dict(COMMON, algorithm=algorithm))


def test_float32_answers_are_the_float64_ones_rounded_bit_for_bit(start_server):
    # Points as values: the server sums f's and g's y-gradients itself, so
    # a float32 stream and a float64 stream whose evaluator rounds its
    # gradients to float32 give the server the same numbers: the same
    # trajectory bit for bit (the server widened every float exactly).
    server = start_server()
    with f2obo.Client(server.address) as client:
        a, b = session(client), session(client)
        stats_a = run(client, a.id, float32=True, recipes=False)
        stats_b = run(client, b.id, float32=False, recipes=False,
                      evaluate_of=lambda step: rounded(evaluator(step)))
        da, db = a.decision(), b.decision()
        np.testing.assert_array_equal(da.x, db.x)
        np.testing.assert_array_equal(da.y, db.y)
        # Up: 4 bytes a number instead of 8 (the gradients are nearly all of it).
        assert stats_a["up_bytes"] < 0.55 * stats_b["up_bytes"]


@pytest.mark.parametrize("algorithm", ["f2obo", "sf2obo"])
def test_a_float32_recipe_stream_follows_the_float64_one_to_float32_rounding(
        start_server, algorithm):
    # With recipes the client fuses f's and g's y-gradients and rounds the
    # sum once; its kept answers are what the server received.  Each
    # gradient entry is then off by at most U relative, so each update of
    # y, z (step * gradient) by at most U times the update; the updates of
    # these 10 steps shrink (g is strongly convex, the steps short), so the
    # trajectories differ by about U * (the iterates' total movement, a
    # few times max|y|) times a small amplification by the later steps.
    # Asserted: <= 8 U max|y| (measured 0.13 U for f2obo, 0.25 U for
    # sf2obo), and x's projected steps within 8 U of x's box width.  That
    # y differs at all shows the wire was float32.
    server = start_server()
    with f2obo.Client(server.address) as client:
        f32 = session(client, algorithm)
        ref, f64 = create_pair(client, algorithm)
        run(client, f64.id, float32=False, recipes=True)
        stats = run(client, f32.id, float32=True, recipes=True)
        assert stats["recipes"] > 0
        for (upper, inner) in STEPS:
            ref.step(upper=upper, inner=inner)
        a, b, r = f32.decision(), f64.decision(), ref.decision()
        # The float64 stream stays the built-in twin's to 1e-12.
        np.testing.assert_allclose(b.x, r.x, rtol=0, atol=1e-12)
        np.testing.assert_allclose(b.y, r.y, rtol=0, atol=1e-12)
        y_gap = np.abs(a.y - b.y).max()
        x_gap = np.abs(a.x - b.x).max()
        assert 0 < y_gap <= 8 * U * np.abs(b.y).max(), y_gap
        assert x_gap <= 8 * U * 0.1, x_gap


def answering(stream, flip_to, bad=None, bad_f=False):
    """An evaluator that switches the stream's answers to `flip_to` after
    its open was sent (a client writing the other wire's fields), or that
    spoils g's y-gradient (and f's: `bad_f`) with `bad` (a function of it)."""
    def evaluate(q):
        value, gx, gy = evaluator(STEPS[0])(q)
        if flip_to is not None:
            stream.float32 = flip_to
        if bad is not None and gy is not None and (q.function == "g" or bad_f):
            gy = bad(gy.copy())
        return value, gx, gy
    return evaluate


@pytest.mark.parametrize("case,message", [
    ("short", r"\]\.(grad|fused)_y_f32: 80 bytes, expected 21 float32 \(84 bytes\)"),
    ("nan", r"\]\.grad_y_f32\[3\]: nan is not finite \(g's gradient in y \(query "),
    ("beyond float32", r"\]\.grad_y_f32\[2\]: inf is not finite \(g's gradient in y \(query "),
    ("float64 field on a float32 stream",
     r"\]\.grad_y: this stream's answers are float32 \(open\.float32 = true\): send "
     r"grad_y_f32 \(query "),
    ("float32 field on a float64 stream",
     r"\]\.grad_y_f32: this stream's answers are float64 \(open\.float32 = false\): send "
     r"grad_y \(query "),
])
def test_a_bad_float32_answer_is_refused_naming_the_field_and_changes_nothing(
        start_server, case, message):
    server = start_server()
    with f2obo.Client(server.address) as client:
        s = session(client)
        with f2obo.OracleStream(client, s.id) as stream:
            stream.float32 = case != "float32 field on a float64 stream"
            flip = {"float64 field on a float32 stream": False,
                    "float32 field on a float64 stream": True}.get(case)

            def spoil(gy):
                if case == "short":
                    return gy[:-1]
                gy[3 if case == "nan" else 2] = np.nan if case == "nan" else 1e39
                return gy
            bad = spoil if case in ("short", "nan", "beyond float32") else None
            answer = stream._answer
            if case == "float32 field on a float64 stream":
                # The client sends float32 only where the server said it
                # reads it: a client that ignores that is made here.
                def ignoring_the_server(request, evaluate_many):
                    request.float32 = True
                    return answer(request, evaluate_many)
                stream._answer = ignoring_the_server
            with pytest.raises(f2obo.InvalidArgument, match=message):
                stream.step(answering(stream, flip, bad, bad_f=case == "short"), upper_rows=32,
                            inner_rows=32)
            stream._answer = answer
            assert s.info().next_t == 1
            stream.float32 = True
            got = stream.step(evaluator(STEPS[0]), upper_rows=32, inner_rows=32)
        assert got.t == 1


def test_a_float32_module_sends_float32_unless_told_not_to(start_server):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    batches = [tuple((torch.from_numpy(rng.normal(size=(16, 4)).astype(np.float32)),
                      torch.from_numpy(rng.integers(0, 3, 16))) for _ in range(2))
               for _ in range(3)]

    def model():
        torch.manual_seed(1)
        return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(),
                                   torch.nn.Linear(8, 3))  # float32

    def g(m, hp, batch):
        X, y = batch
        ridge = sum((p * p).sum() for p in m.parameters())
        return torch.nn.functional.cross_entropy(m(X), y) + 0.5 * hp["wd"][0] * ridge

    def f(m, hp, batch):
        X, y = batch
        return torch.nn.functional.cross_entropy(m(X), y)
    server = start_server()
    with f2obo.Client(server.address) as client:
        client.wait_ready(120)
        tuners = [f2obo.torch.Tuner(
            client, model(), {"wd": f2obo.torch.Hyperparameter(torch.tensor([0.01]),
                                                               box=(0.0, 0.1))},
            g, f, seed=3, inner_steps=3, alpha=0.3, beta=0.3, gamma=0.05, float32_wire=w)
            for w in (None, False)]
        assert [t._stream.float32 for t in tuners] == [True, False]
        for (val, train) in batches:
            for t in tuners:
                t.step(val, train)
        up = [t._stream.stats["up_bytes"] for t in tuners]
        assert up[0] < 0.55 * up[1], up
        # The gradients were float32 numbers either way (the module's); only
        # the fused sum's rounding differs (float32 vs float64).
        x = [t.session.decision().x for t in tuners]
        assert np.abs(x[0] - x[1]).max() <= 64 * 2.0 ** -24 * 0.1
        for t in tuners:
            t.close()


def test_float32_is_sent_only_where_the_server_acknowledges_it():
    # A server that predates the float32 wire ignores OracleStepOpen.float32,
    # never sets OracleRequest.float32 and reads the float64 fields only: a
    # client that asked for float32 answers it in float64 (no server needed:
    # the requests are built here as each server would send them).
    from f2obo._stubs import pb
    stream = f2obo.OracleStream(None, "s")
    stream.float32 = True
    grad_y = np.linspace(-1.0, 1.0, 4)
    for acknowledged in (False, True):
        request = pb.OracleRequest(float32=acknowledged)
        request.points.add(id=1, values=np.arange(3.0).tobytes())
        request.points.add(id=2, values=np.arange(4.0).tobytes())
        request.queries.add(id=3, function=pb.OracleQuery.G, x=1, y=2, all_rows=True,
                            grad_y=True)
        message = pb.OracleClientMessage.FromString(  # the bytes the stream sends
            stream._answer(request, lambda queries: [(None, None, grad_y)]))
        answer = message.answers.answers[0]
        if acknowledged:
            assert answer.grad_y_f32 == grad_y.astype(np.float32).tobytes()
            assert answer.grad_y == b""
        else:
            assert answer.grad_y == grad_y.tobytes()
            assert answer.grad_y_f32 == b""
