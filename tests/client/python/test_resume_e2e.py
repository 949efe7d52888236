"""Streams and steps survive the server being killed (SIGKILL) and restarted
on the same port and data directory: every step is applied exactly once.

The check is the trajectory: sf2obo draws its mini-batches from the
session's seeded generator, so a step lost or applied twice changes x (and
the counters); the interrupted session must end bit for bit where a
session streamed without interruption ends.
"""
import threading

import pytest

import f2obo
from fault_proxy import FaultProxy
from helpers import batches, classification_data, same_bits

D, C = 10, 3
X, Y = classification_data(rows=800, features=D, classes=C, seed=21)
STEPS = batches(X, Y, rows_per_step=64, steps=60, seed=22)
SPEC = dict(family="logistic_hpo", features=D, classes=C, algorithm="sf2obo", box=(0.0, 0.1),
            seed=5, exact_every=0)


def reference(client, steps, **spec):
    s = client.create_session(**dict(SPEC, **spec))
    return {r.t: r for r in s.stream(steps)}, s


def assert_same_run(session, results, ref_results, ref_session):
    assert sorted(results) == sorted(ref_results)
    for t, r in results.items():
        assert same_bits(r.x, ref_results[t].x), "x after step %d differs" % t
    a, b = session.info(), ref_session.info()
    assert a.next_t == b.next_t == len(ref_results) + 1
    assert (a.inner_iterations, a.rows_processed) == (b.inner_iterations, b.rows_processed)
    assert same_bits(session.decision().y, ref_session.decision().y)


@pytest.mark.parametrize("in_flight", [1, 4])
def test_stream_resumes_after_kill_9_without_losing_or_repeating_a_step(start_server,
                                                                        in_flight):
    server = start_server()
    with f2obo.Client(server.address, reconnect_timeout=60) as c:
        s = c.create_session(**SPEC)
        results, restarts = {}, []
        for r in s.stream(STEPS, in_flight=in_flight):
            assert r.t not in results, "step %d answered twice" % r.t
            results[r.t] = r
            if r.t == 20:  # requests for 21.. may be in flight, applied or not
                server.kill()
                server.restart()  # at once
                restarts.append(r.t)
            elif r.t == 40:
                server.kill()  # back while the client waits for it
                restarter = threading.Thread(target=server.restart)
                restarter.start()
                restarts.append(r.t)
        restarter.join()
        assert restarts == [20, 40]
        assert [t for t in results] == list(range(1, len(STEPS) + 1))
        ref_results, ref_session = reference(c, STEPS)
        assert_same_run(s, results, ref_results, ref_session)


@pytest.mark.parametrize("in_flight,lost", [(1, 1), (4, 3)])
def test_replies_lost_after_the_server_applied_the_steps_are_replayed(start_server, in_flight,
                                                                       lost):
    # The connection dies after the server applied steps 11.. but before
    # their replies arrive: the client sends them again on a new stream and
    # gets the cached replies (replayed), applying nothing twice.
    server = start_server()
    proxy = FaultProxy(server.address)
    try:
        with f2obo.Client(proxy.address) as c:
            s = c.create_session(**SPEC)
            proxy.break_next_stream(answered=10, swallowed=lost)
            results = {}
            for r in s.stream(STEPS[:30], in_flight=in_flight):
                assert r.t not in results
                results[r.t] = r
            assert proxy.swallowed == lost
            # The lost ones are replayed; a request still in flight when the
            # stream broke may have been applied too (then it is replayed).
            replayed = [t for t, r in results.items() if r.replayed]
            assert replayed[:lost] == list(range(11, 11 + lost))
            assert replayed == list(range(11, 11 + len(replayed))) and len(replayed) <= in_flight
            ref_results, ref_session = reference(c, STEPS[:30])
            assert_same_run(s, results, ref_results, ref_session)
            for t in range(11, 11 + lost):  # the original reply (its timing aside)
                mine, ref = results[t].report.to_dict(), ref_results[t].report.to_dict()
                del mine["round_seconds"], ref["round_seconds"]
                assert mine == ref
    finally:
        proxy.close()


def test_group_replies_lost_are_replayed(start_server):
    server = start_server()
    proxy = FaultProxy(server.address)
    shared = dict(SPEC)
    del shared["algorithm"]
    try:
        with f2obo.Client(proxy.address) as c:
            group = c.create_group("g", members={"a": "sf2obo", "b": "f2obo"}, **shared)
            proxy.break_next_stream(answered=5, swallowed=2)
            results = list(group.stream(STEPS[:12], in_flight=2))
            assert [r.t for r in results] == list(range(1, 13))
            assert [r.t for r in results if r["a"].replayed] == [6, 7]
            assert all(r["a"].replayed == r["b"].replayed for r in results)
            assert all(m.next_t == 13 for m in group.info().members)
    finally:
        proxy.close()


def test_unary_step_retries_across_a_restart(start_server):
    server = start_server()
    with f2obo.Client(server.address, reconnect_timeout=60) as c:
        s = c.create_session(**SPEC)
        results = {}
        for t, step in enumerate(STEPS[:10], 1):
            if t == 6:
                server.kill()
                restarter = threading.Thread(target=server.restart)
                restarter.start()
            results[t] = s.step(*step)
        restarter.join()
        ref_results, ref_session = reference(c, STEPS[:10])
        assert_same_run(s, results, ref_results, ref_session)


def test_group_stream_resumes_after_kill_9(start_server):
    server = start_server()
    members = {"sf2obo": "sf2obo", "f2obo": {"algorithm": "f2obo", "inner_steps": 3}}
    shared = dict(SPEC)
    del shared["algorithm"]
    with f2obo.Client(server.address, reconnect_timeout=60) as c:
        group = c.create_group("live", members=members, **shared)
        seen = []
        for r in group.stream(STEPS[:30], in_flight=3):
            seen.append(r.t)
            if r.t == 12:
                server.kill()
                server.restart()
        assert seen == list(range(1, 31))
        ref = c.create_group("ref", members=members, **shared)
        for _ in ref.stream(STEPS[:30]):
            pass
        mine, theirs = group.sessions, ref.sessions
        for name in members:
            assert mine[name].info().next_t == 31
            assert same_bits(mine[name].decision().x, theirs[name].decision().x), name
