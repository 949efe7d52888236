"""Sessions through the Python package against a real f2obo-server on
loopback: create, step, stream, decision, metrics, export/import, list,
delete."""
import numpy as np
import pytest

import f2obo
from helpers import batches, classification_data, same_bits

D, C = 12, 3
X, Y = classification_data(rows=600, features=D, classes=C, seed=1)
STEPS = batches(X, Y, rows_per_step=64, steps=12, seed=2)
HPO = dict(family="logistic_hpo", features=D, classes=C, algorithm="af2obo", box=(0.0, 0.1),
           alpha_auto=True, beta_auto=True, exact_every=1)


def test_create_fills_defaults_and_starts_at_t_1(client):
    s = client.create_session(**HPO)
    info = s.info()
    assert info.next_t == 1 and s.next_t == 1
    assert info.x_dim == D and info.y_dim == (D + 1) * C
    assert info.spec.algorithm == "af2obo" and info.spec.family.classes == C
    assert info.spec.options.alpha_auto is True
    assert info.spec.options.delta_y is not None  # af2obo's default, filled in by the server
    assert list(info.spec.constraint.box.hi) == [0.1]


def test_static_quadratic_converges_to_the_least_squares_solution(client):
    # g = (mu/2)||y - (M x + c)||^2, f = (1/2)||y - d||^2: grad F(x) = M^T (M x + c - d),
    # so x_t -> the solution of M x = d - c: (1, 0.5) for M = diag(1, 2), c = 0, d = (1, 1).
    s = client.create_session(family="quadratic", x_dim=2, y_dim=2, mu=1.0, algorithm="f2obo",
                              inner_steps=10, alpha=1.0, beta=0.5, gamma=0.1)
    M = np.array([[1.0, 0.0], [0.0, 2.0]])
    steps = [({"d": [1.0, 1.0]}, {"m": M, "c": [0.0, 0.0]})] * 300
    last = None
    for last in s.stream(steps, in_flight=8):
        pass
    assert last.t == 300
    assert np.max(np.abs(last.x - [1.0, 0.5])) < 1e-3
    d = s.decision()
    assert d.t == 301 and same_bits(d.x, last.x) and d.y.shape == (2,)
    assert d.lambda_ > 0


def test_step_returns_the_new_decision_and_the_round_report(client):
    s = client.create_session(**HPO)
    r = s.step(upper=STEPS[0][0], inner=STEPS[0][1])
    assert r.t == 1 and s.next_t == 2 and not r.replayed
    assert r.x.shape == (D,) and r.x.dtype == np.float64
    assert np.all((r.x >= 0.0) & (r.x <= 0.1))  # in the box
    assert r.report.lambda_ == r.lambda_ > 0 and r.step_sizes_auto
    assert r.upper_loss_before == pytest.approx(np.log(C))  # y_1 = 0: uniform softmax
    assert r.accuracy_before is not None and 0 <= r.accuracy_before <= 1
    assert r.rows_processed > 0 and r.round_seconds >= 0
    assert same_bits(s.decision().x, r.x)


def test_unary_steps_and_the_stream_give_the_same_trajectory(client):
    unary = client.create_session(**HPO)
    streamed = client.create_session(**HPO)
    pipelined = client.create_session(**HPO)
    xs = [unary.step(u, i).x for u, i in STEPS]
    ys = [r.x for r in streamed.stream(STEPS)]
    zs = list(pipelined.stream(iter(STEPS), in_flight=4))
    assert [r.t for r in zs] == list(range(1, len(STEPS) + 1))
    assert all(same_bits(a, b) for a, b in zip(xs, ys))
    assert all(same_bits(a, b.x) for a, b in zip(xs, zs))
    assert streamed.next_t == len(STEPS) + 1


def test_stream_reads_its_input_lazily_one_step_ahead(client):
    s = client.create_session(**HPO)
    pulled = []

    def source():
        for k, step in enumerate(STEPS[:4]):
            pulled.append(k)
            yield step
    it = s.stream(source())
    first = next(it)
    assert first.t == 1 and pulled == [0]  # step 2 is not built before reply 1 is used
    assert [r.t for r in it] == [2, 3, 4] and pulled == [0, 1, 2, 3]


def test_a_retried_index_is_answered_from_the_cache_and_applied_once(client):
    s = client.create_session(**HPO)
    first = s.step(*STEPS[0])
    again = s.step(*STEPS[0], t=1)
    assert again.replayed and same_bits(again.x, first.x) and again.t == 1
    assert s.info().next_t == 2


def test_a_replayed_stream_skips_the_steps_already_applied(client):
    reference = client.create_session(**HPO)
    for _ in reference.stream(STEPS):
        pass
    s = client.create_session(**HPO)
    for u, i in STEPS[:5]:
        s.step(u, i)
    resumed = list(s.stream(STEPS, first_t=1))  # a restarted script replays from the start
    assert [r.t for r in resumed] == list(range(6, len(STEPS) + 1))
    assert same_bits(s.decision().x, reference.decision().x)


def test_stream_items_may_be_mappings_and_extra_keywords_are_checked(client):
    s = client.create_session(**HPO)
    (u, i) = STEPS[0]
    r = next(s.stream([{"upper": {"features": u[0], "labels": u[1]}, "inner": i}]))
    assert r.t == 1
    with pytest.raises(TypeError) as e:
        s.step(u, i, tt=3)
    assert "'tt'" in str(e.value) and "StepRequest" in str(e.value)
    with pytest.raises(TypeError) as e:
        next(s.stream([{"upper": u, "inner": i, "t": 9}]))
    assert "'t' is set by the library" in str(e.value)
    with pytest.raises(ValueError):
        s.stream(STEPS, in_flight=17)


def test_csr_and_dense_batches_of_the_same_rows_are_both_accepted(client):
    import scipy.sparse
    dense = client.create_session(**HPO)
    sparse = client.create_session(**HPO)
    for (u, i) in STEPS[:3]:
        rd = dense.step(u, i)
        rs = sparse.step((scipy.sparse.csr_matrix(u[0]), u[1]),
                         (scipy.sparse.csr_matrix(i[0]), i[1]))
        assert rd.t == rs.t
        np.testing.assert_allclose(rs.x, rd.x, rtol=1e-9, atol=1e-12)


def test_metrics_stream_every_step_in_order_with_exact_metrics(client):
    s = client.create_session(**HPO)
    results = list(s.stream(STEPS))
    with s.metrics(until_t=len(STEPS), timeout=60) as watch:
        ms = list(watch)
    assert [m.t for m in ms] == list(range(1, len(STEPS) + 1))
    for m, r in zip(ms, results):
        assert m.report == r.report  # the same round report as the step's reply
        assert m.exact is not None and m.exact.t == m.t
        assert m.regret_term >= 0 and m.inner_converged in (True, False)
    # BLReg is the running sum of the regret terms (paper Eq. 2).
    blreg = np.cumsum([m.exact.regret_term for m in ms])
    np.testing.assert_allclose([m.exact.running.blreg for m in ms], blreg, rtol=1e-12)
    assert s.info().metrics.blreg == pytest.approx(blreg[-1], rel=1e-12)
    later = list(s.metrics(after_t=len(STEPS) - 2, until_t=len(STEPS), timeout=60))
    assert [m.t for m in later] == [len(STEPS) - 1, len(STEPS)]


def test_a_cancelled_watch_ends_quietly(client):
    s = client.create_session(**HPO)
    s.step(*STEPS[0])
    watch = s.metrics(timeout=60)
    assert next(watch).t == 1
    watch.cancel()
    assert list(watch) == []


def test_export_import_continues_bit_for_bit(client):
    s = client.create_session(**dict(HPO, algorithm="sf2obo", seed=11))
    for u, i in STEPS[:6]:
        s.step(u, i)
    exported = s.export()
    assert exported.session_id == s.id and exported.spec.algorithm == "sf2obo"
    copy = client.import_session(exported.SerializeToString(), session_id=s.id + "-copy")
    assert copy.id == s.id + "-copy" and copy.next_t == 7
    for u, i in STEPS[6:]:
        a, b = s.step(u, i), copy.step(u, i)
        assert a.t == b.t and same_bits(a.x, b.x)
    assert same_bits(s.decision().y, copy.decision().y)
    with pytest.raises(f2obo.AlreadyExists):
        client.import_session(exported)


def test_export_chunks_and_import_chunks_continue_bit_for_bit(client):
    # A session of ~0.1 MB in chunks of 4 KiB (the streamed RPCs are for
    # sessions larger than a message; tests/server/transfer_e2e_test.cc
    # moves such a one).
    d, c = 200, 10
    x, y = classification_data(rows=400, features=d, classes=c, seed=3)
    steps = batches(x, y, rows_per_step=32, steps=8, seed=4)
    hpo = dict(HPO, features=d, classes=c, exact_every=0)
    s = client.create_session(**hpo)
    for u, i in steps[:5]:
        s.step(u, i)
    chunks = list(s.export_chunks(chunk_bytes=4096))
    assert len(chunks) > 10 and chunks[0].begin.session_id == s.id and chunks[-1].HasField("end")
    assert max(len(ch.SerializeToString()) for ch in chunks) <= 4096 + 256
    # Damaged in transit: refused by a checksum (the stream's, or in the
    # state's head its own), and nothing is left.
    damaged = [type(ch).FromString(ch.SerializeToString()) for ch in chunks]
    data = bytearray(damaged[3].slices[0].data)
    data[0] ^= 1
    damaged[3].slices[0].data = bytes(data)
    with pytest.raises(f2obo.InvalidArgument, match="chunk.end.crc32|checksum mismatch"):
        client.import_chunks(damaged, session_id=s.id + "-copy")
    # Cut short: refused, nothing left.
    with pytest.raises(f2obo.InvalidArgument, match="without its end chunk"):
        client.import_chunks(chunks[:-1], session_id=s.id + "-copy")
    assert s.id + "-copy" not in [i.session_id for i in client.list_sessions()]
    copy = client.import_chunks(iter(chunks), session_id=s.id + "-copy")
    assert copy.id == s.id + "-copy" and copy.next_t == 6
    for u, i in steps[5:]:
        a, b = s.step(u, i), copy.step(u, i)
        assert a.t == b.t and same_bits(a.x, b.x)
    assert same_bits(s.decision().y, copy.decision().y)


def test_rollback_undoes_a_poisoned_stretch_and_fork_branches_a_challenger(client):
    s = client.create_session(**dict(HPO, seed=5))
    clean = client.create_session(**dict(HPO, seed=5))
    for u, i in STEPS[:4]:
        s.step(u, i)
        clean.step(u, i)
    assert 4 in s.checkpoint().checkpoints
    # A "poisoned" stretch: labels shuffled.
    for (xu, yu), (xi, yi) in STEPS[4:7]:
        s.step((xu, yu[::-1].copy()), (xi, yi[::-1].copy()))
    info = s.rollback(4)
    assert info.next_t == 5 and s.next_t == 5
    challenger = s.fork("challenger", algorithm="f2obo", inner_steps=3)
    assert challenger.next_t == 5
    assert challenger.info().spec.algorithm == "f2obo"
    assert challenger.info().spec.options.inner_steps == 3
    for u, i in STEPS[4:]:
        a, b = s.step(u, i), clean.step(u, i)
        assert a.t == b.t and same_bits(a.x, b.x)
        challenger.step(u, i)
    assert not same_bits(challenger.decision().x, s.decision().x)
    with pytest.raises(f2obo.FailedPrecondition):
        s.rollback(2)  # no checkpoint kept there
    with pytest.raises(TypeError, match="no_such_option"):
        s.fork(algorithm="f2obo", no_such_option=1)


def test_list_and_delete(client):
    s = client.create_session(session_id="to-delete", **HPO)
    assert s.id == "to-delete"
    assert "to-delete" in [i.session_id for i in client.list_sessions()]
    s.delete()
    assert "to-delete" not in [i.session_id for i in client.list_sessions()]
    with pytest.raises(f2obo.NotFound) as e:
        s.decision()
    assert "to-delete" in e.value.message
