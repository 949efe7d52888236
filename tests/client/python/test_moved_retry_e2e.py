"""The "moved" status (a session being rebalanced to another replica) is
retried with the same step index for up to `moved_retry_seconds`, past the
client's `retries` / a stream's `reconnects`, so a step survives the window
from a rebalance's fence to the proxy switch (deploy/README.md's runbook)
and is applied exactly once.

A real server fences the session's routing key (SetFence, as
`f2obo-cli rebalance` does); the test lifts it (standing in for the proxy
routing the key to its new owner) only after the server has refused the
client more often than `retries` would allow, read from the server's own
f2obo_rpc_errors_total counter.
"""
import re
import threading
import time
import urllib.request

import pytest

import f2obo
from f2obo._stubs import pb
from helpers import batches, classification_data

D, C = 6, 3
X, Y = classification_data(rows=300, features=D, classes=C, seed=31)
STEPS = batches(X, Y, rows_per_step=32, steps=6, seed=32)
SPEC = dict(family="logistic_hpo", features=D, classes=C, algorithm="sf2obo", box=(0.0, 0.1),
            seed=7, exact_every=0)
KEY = "moving"


def refusals(server, method):
    """UNAVAILABLE answers to `method` the server has counted."""
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % server.metrics_port).read()
    for line in text.decode().splitlines():
        if (line.startswith("f2obo_rpc_errors_total{") and 'method="%s"' % method in line
                and "UNAVAILABLE" in line):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def fence(client, on):
    if on:
        client.stub.SetFence(pb.SetFenceRequest(routing_key=KEY, target="r1"))
    else:
        client.stub.LiftFence(pb.LiftFenceRequest(routing_key=KEY))


def wait_for_refusals(server, method, count):
    """Polls the server's counter until it reaches `count` (or 30 s pass)."""
    deadline = time.monotonic() + 30
    while refusals(server, method) < count and time.monotonic() < deadline:
        time.sleep(0.01)  # poll interval
    return refusals(server, method)


@pytest.fixture
def fenced(start_server):
    """(server, admin client, session at next_t = 2 whose key is fenced)."""
    server = start_server("--replica_name=r0")
    with f2obo.Client(server.address, retries=0) as admin:
        s = admin.create_session(session_id=KEY, **SPEC)
        s.step(*STEPS[0])
        fence(admin, True)
        yield server, admin, s


def test_without_the_budget_moved_is_one_more_unavailable(fenced):
    server, _, _ = fenced
    with f2obo.Client(server.address, retries=1, moved_retry_seconds=0) as c:
        with pytest.raises(f2obo.Unavailable) as e:
            c.session(KEY).step(*STEPS[1], t=2)
    assert f2obo.errors.is_moved(e.value), e.value.message
    assert re.search(r"moving to replica 'r1'", e.value.message)


def test_a_step_retries_moved_past_retries_and_is_applied_once(fenced):
    server, admin, s = fenced
    before = refusals(server, "Step")
    got = {}
    with f2obo.Client(server.address, retries=1, moved_retry_seconds=60) as c:
        stepper = threading.Thread(
            target=lambda: got.setdefault("r", c.session(KEY).step(*STEPS[1], t=2)))
        stepper.start()
        assert wait_for_refusals(server, "Step", before + 6) >= before + 6
        fence(admin, False)
        stepper.join()
    assert got["r"].t == 2
    assert s.info().next_t == 3, "the retried step was applied other than once"


def test_a_stream_reconnects_through_moved_past_reconnects_without_a_gap(fenced):
    server, admin, s = fenced
    before = refusals(server, "Steps")
    results = []
    with f2obo.Client(server.address, retries=1, moved_retry_seconds=60) as c:
        streamer = threading.Thread(target=lambda: results.extend(
            r.t for r in c.session(KEY).stream(STEPS[1:], first_t=2, reconnects=1)))
        streamer.start()
        assert wait_for_refusals(server, "Steps", before + 4) >= before + 4
        fence(admin, False)
        streamer.join()
    assert results == list(range(2, len(STEPS) + 1))
    assert s.info().next_t == len(STEPS) + 1
