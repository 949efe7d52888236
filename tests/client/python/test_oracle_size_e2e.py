"""Oracle sessions larger than one message, over real gRPC: when a round's
points or answers do not fit the server's --max_message_bytes, its
queries come in several requests and the trajectory is bit for bit the
one of a server whose messages hold them all; a session one of whose
vectors cannot fit a message, or whose memory (counted with what an
oracle stream holds) does not fit --max_total_state_bytes, is refused at
create naming the limit and its flag.
"""
import numpy as np
import pytest

import f2obo
from f2obo._stubs import pb

X_DIM = 4
COMMON = dict(algorithm="f2obo", inner_steps=3, alpha=0.1, beta=0.1, gamma=0.01,
              box=(0.0, 1.0), seed=1)


def quadratic_oracle(y_dim):
    """g = 1/2 ||y - x_0 c||^2 + 1/2 mu ||y||^2, f = 1/2 ||y - d||^2."""
    rng = np.random.default_rng(4)
    c, d, mu = rng.normal(size=y_dim), rng.normal(size=y_dim), 0.5

    def evaluate(q):
        if q.function == "g":
            r = q.y - q.x[0] * c
            gx = np.zeros(X_DIM) if q.want_grad_x else None
            if gx is not None:
                gx[0] = -(r @ c)
            return (0.5 * (r @ r) + 0.5 * mu * (q.y @ q.y), gx,
                    r + mu * q.y if q.want_grad_y else None)
        r = q.y - d
        return 0.5 * (r @ r), np.zeros(X_DIM) if q.want_grad_x else None, \
            r if q.want_grad_y else None
    return evaluate


def run(address, y_dim, steps):
    requests = []
    evaluate = quadratic_oracle(y_dim)

    def evaluate_many(qs):
        requests.append(len(qs))
        return [evaluate(q) for q in qs]
    with f2obo.Client(address) as client:
        session = client.create_session(family="oracle", x_dim=X_DIM, y_dim=y_dim, **COMMON)
        with f2obo.OracleStream(client, session.id) as stream:
            for _ in range(steps):
                stream.step(evaluate_many=evaluate_many, upper_rows=8, inner_rows=8)
        return session.decision(), requests


def test_a_round_larger_than_a_message_is_asked_in_parts_with_the_same_trajectory(
        start_server):
    # y: 100,000 float64 = 800 KB; a message of 1 MiB holds one such vector
    y_dim = 100_000
    small = start_server("--max_message_bytes=1048576")
    large = start_server()
    a, parts = run(small.address, y_dim, steps=2)
    b, whole = run(large.address, y_dim, steps=2)
    assert a.t == b.t == 3
    assert a.x.tobytes() == b.x.tobytes() and a.y.tobytes() == b.y.tobytes()
    # F2OBO: K inner iterations of three gradients, the prequential value and
    # the hypergradient; split, each gradient of y travels in its own answer
    assert len(whole) == 2 * (3 + 2)
    assert len(parts) > len(whole) and sum(parts) == sum(whole)


def test_a_session_whose_vectors_cannot_fit_a_message_is_refused_at_create(start_server):
    server = start_server("--max_message_bytes=1048576")
    with f2obo.Client(server.address) as client:
        # (create is not retried: connected first, so that only its answer counts)
        client.wait_ready()
        with pytest.raises(f2obo.ResourceExhausted,
                           match=r"spec.family: an oracle session sends each vector of 200000 "
                                 r"float64 .* \(--max_message_bytes; raise it"):
            client.create_session(family="oracle", x_dim=X_DIM, y_dim=200_000, **COMMON)
        assert client.list_sessions() == []


def test_admission_counts_what_an_oracle_session_holds(start_server):
    # An oracle session counts 17 vectors of y (y and z, and a step's peak
    # of 15 more: server/session_footprint.h).  125 MB admit a built-in
    # session of y = 10^6 (7 vectors of 8 MB) and an oracle session of
    # y = 900,000 (122.4 MB), but not an oracle session of y = 10^6 (136 MB)
    server = start_server("--max_total_state_bytes=125000000", "--max_message_bytes=16777216")
    with f2obo.Client(server.address) as client:
        client.wait_ready()
        client.create_session(family="quadratic", x_dim=X_DIM, y_dim=1_000_000,
                              session_id="builtin", algorithm="f2obo", alpha=0.1, beta=0.1)
        client.delete_session("builtin")
        client.create_session(family="oracle", x_dim=X_DIM, y_dim=900_000, session_id="fits",
                              **COMMON)
        client.delete_session("fits")
        with pytest.raises(f2obo.ResourceExhausted,
                           match=r"and what an oracle session's stream holds\) does not fit the "
                                 r"memory limit max_total_state_bytes = 125000000 "
                                 r"\(--max_total_state_bytes"):
            client.create_session(family="oracle", x_dim=X_DIM, y_dim=1_000_000, **COMMON)


def _rss_bytes(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def test_an_oracle_session_holds_under_three_copies_of_y_between_steps(start_server):
    # Between steps an oracle session keeps y and z and no other vector of
    # y's size: the round's copy, the algorithm's gradients, the points its
    # stream built recipes on and the step's messages are freed (and their
    # pages returned).  Two sessions of 2 x 10^6 parameters (16 MB a
    # vector), each stepped on a stream kept open: the server grows by
    # less than three vectors a session (it held ~14 as built before).
    y_dim = 2_000_000
    y_bytes = 8 * y_dim
    server = start_server()
    with f2obo.Client(server.address) as client:
        client.wait_ready()
        client.list_sessions()
        base = _rss_bytes(server.proc.pid)
        streams = []
        for i in range(2):
            s = client.create_session(family="oracle", x_dim=X_DIM, y_dim=y_dim,
                                      session_id="big%d" % i, **COMMON)
            stream = f2obo.OracleStream(client, s.id)
            evaluate = quadratic_oracle(y_dim)
            for _ in range(3):
                stream.step(evaluate, upper_rows=4, inner_rows=4)
            streams.append(stream)
        grown = _rss_bytes(server.proc.pid) - base
        for stream in streams:
            stream.close()
    assert grown < 2 * 3 * y_bytes, "%.1f copies of y a session" % (grown / 2 / y_bytes)


def test_a_large_model_answers_one_vector_of_y_a_message_with_the_same_trajectory(
        start_server):
    # From 4 MiB of y (524,288 float64) on, each answer message carries one
    # y-sized vector (server/oracle_message_limits.h, kOracleOneAnswerBytes):
    # the answer in flight on the server is then one vector and its decoded
    # copy, not three of each.  y = 600,000: the queries of a round come in
    # more requests than a round of y = 500,000 (below the line) needs, and
    # the trajectory does not depend on how they were grouped (the round
    # of a 1 MiB message limit above).
    server = start_server()
    counts = {}
    for y_dim in (500_000, 600_000):
        evaluate = quadratic_oracle(y_dim)
        per_message = counts.setdefault(y_dim, [])
        with f2obo.Client(server.address) as client:
            session = client.create_session(family="oracle", x_dim=X_DIM, y_dim=y_dim,
                                            **COMMON)
            with f2obo.OracleStream(client, session.id) as stream:
                answer = stream._answer

                def spy(request, evaluate_many, answer=answer, per_message=per_message):
                    message = answer(request, evaluate_many)  # its bytes on the wire
                    parsed = pb.OracleClientMessage.FromString(message)
                    per_message.append(sum(1 for a in parsed.answers.answers
                                           if a.grad_y or a.fused_y))
                    return message
                stream._answer = spy
                stream.step(evaluate, upper_rows=4, inner_rows=4)
            assert session.info().next_t == 2
    assert max(counts[600_000]) == 1, counts[600_000]
    assert max(counts[500_000]) > 1, counts[500_000]
    assert sum(counts[600_000]) == sum(counts[500_000])
    assert len(counts[600_000]) > len(counts[500_000])
