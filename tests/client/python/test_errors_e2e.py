"""Every error path a Python user meets raises the f2obo exception of its
gRPC status code, with the server's message kept verbatim (real server;
auth with a token file, TLS and mutual TLS with certificates made here by
openssl, limits set by flags)."""
import subprocess

import grpc
import numpy as np
import pytest

import f2obo
from helpers import classification_data

D, C = 6, 3
X, Y = classification_data(rows=40, features=D, classes=C, seed=9)
UP, IN = (X[:20], Y[:20]), (X[20:], Y[20:])
HPO = dict(family="logistic_hpo", features=D, classes=C, algorithm="f2obo", box=(0.0, 0.1))


def raises(cls, fn, *words):
    """Runs fn, which must raise exactly `cls`, whose message has `words`."""
    with pytest.raises(f2obo.Error) as e:
        fn()
    assert type(e.value) is cls, "%r is not a %s" % (e.value, cls.__name__)
    assert e.value.code == cls.status_code
    for w in words:
        assert w in e.value.message, (w, e.value.message)
    return e.value


def test_invalid_argument_names_the_field_and_changes_nothing(client):
    s = client.create_session(**HPO)
    bad_labels = np.array(Y[20:])
    bad_labels[3] = 12
    e = raises(f2obo.InvalidArgument, lambda: s.step(UP, (X[20:], bad_labels)),
               "label[3] = 12", "[0, 3)")
    assert isinstance(e, ValueError)
    nan = X[:20].copy()
    nan[2, 1] = np.nan
    raises(f2obo.InvalidArgument, lambda: s.step((nan, Y[:20]), IN), "upper")
    raises(f2obo.InvalidArgument, lambda: s.step((X[:20, :4], Y[:20]), IN), "4")
    assert s.info().next_t == 1  # nothing was applied
    raises(f2obo.InvalidArgument, lambda: client.create_session(family="no_such_family"),
           "no_such_family")
    raises(f2obo.InvalidArgument,
           lambda: client.create_session(**dict(HPO, algorithm="f2obo", gamma=-1.0)), "gamma")


def test_not_found_and_already_exists_name_the_session(client):
    e = raises(f2obo.NotFound, lambda: client.session("nope").decision(), "nope")
    assert isinstance(e, LookupError)
    raises(f2obo.NotFound, lambda: client.session("nope").step(UP, IN, t=1), "nope")
    raises(f2obo.NotFound, lambda: client.delete_session("nope"), "nope")
    client.create_session(session_id="twice", **HPO)
    raises(f2obo.AlreadyExists, lambda: client.create_session(session_id="twice", **HPO),
           "twice")


def test_failed_precondition_names_the_expected_index(client):
    s = client.create_session(**HPO)
    s.step(UP, IN)
    raises(f2obo.FailedPrecondition, lambda: s.step(UP, IN, t=7), "7", "2")
    assert s.step(UP, IN).t == 2  # the handle asked the server again
    stream = s.stream([(UP, IN)], first_t=9)
    raises(f2obo.FailedPrecondition, lambda: list(stream), "3")


def test_resource_exhausted_names_the_limit(start_server):
    server = start_server("--max_batch_rows=16", "--max_sessions=1")
    with f2obo.Client(server.address) as c:
        s = c.create_session(**HPO)
        raises(f2obo.ResourceExhausted, lambda: s.step(UP, IN), "max_batch_rows")
        raises(f2obo.ResourceExhausted, lambda: c.create_session(**HPO), "max_sessions")


def test_tokens_unauthenticated_and_permission_denied(start_server, tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text("read reader-token-0123456789\nwrite writer-token-0123456789\n")
    server = start_server("--token_file=%s" % tokens)
    with f2obo.Client(server.address) as anonymous:
        raises(f2obo.Unauthenticated, lambda: anonymous.list_sessions(), "authorization")
    with f2obo.Client(server.address, token="wrong") as wrong:
        raises(f2obo.Unauthenticated, lambda: wrong.create_session(**HPO))
    with f2obo.Client(server.address, token="writer-token-0123456789") as writer, \
            f2obo.Client(server.address, token="reader-token-0123456789") as reader:
        s = writer.create_session(**HPO)
        s.step(UP, IN)
        raises(f2obo.PermissionDenied, lambda: reader.create_session(**HPO))
        raises(f2obo.PermissionDenied, lambda: reader.session(s.id).step(UP, IN))
        assert reader.session(s.id).decision().t == 2  # reads are allowed
        watch = reader.session(s.id).metrics(until_t=1, timeout=60)
        assert [m.t for m in watch] == [1]


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    script = """
      openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=f2obo-test-ca
      openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost
      printf 'subjectAltName=DNS:localhost,IP:127.0.0.1' > san.ext
      openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile san.ext
      openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj /CN=f2obo-client
      openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 2
    """
    subprocess.run(["bash", "-ec", script], cwd=d, check=True, capture_output=True)
    return d


def test_tls_and_mutual_tls(start_server, pki):
    server = start_server("--tls_cert_file=%s" % (pki / "server.pem"),
                          "--tls_key_file=%s" % (pki / "server.key"))
    with f2obo.Client(server.address, tls=f2obo.TLS(ca=str(pki / "ca.pem"))) as c:
        assert c.create_session(**HPO).step(UP, IN).t == 1
    with f2obo.Client(server.address, retries=0, timeout=5) as plain:
        raises(f2obo.Unavailable, lambda: plain.list_sessions())
    mutual = start_server("--tls_cert_file=%s" % (pki / "server.pem"),
                          "--tls_key_file=%s" % (pki / "server.key"),
                          "--tls_client_ca_file=%s" % (pki / "ca.pem"))
    tls = f2obo.TLS(ca=(pki / "ca.pem").read_bytes(), cert=str(pki / "client.pem"),
                    key=str(pki / "client.key"))
    with f2obo.Client(mutual.address, tls=tls) as c:
        assert c.list_sessions() == []
    with f2obo.Client(mutual.address, tls=f2obo.TLS(ca=str(pki / "ca.pem")), retries=0,
                      timeout=5) as no_cert:
        raises(f2obo.Unavailable, lambda: no_cert.list_sessions())
    with pytest.raises(ValueError):
        f2obo.TLS(ca=str(pki / "ca.pem"), cert=str(pki / "client.pem")).credentials()


def test_unavailable_when_no_server_listens(free_port):
    with f2obo.Client("127.0.0.1:%d" % free_port, retries=1, reconnect_timeout=0.5) as c:
        raises(f2obo.Unavailable, lambda: c.list_sessions(), "within 0.5 s")
        raises(f2obo.Unavailable, lambda: c.session("s").step(UP, IN, t=1), "within 0.5 s")
        # Not retried (a lost reply would make a retry fail): the first error.
        raises(f2obo.Unavailable, lambda: c.create_session(**HPO))
        with pytest.raises(f2obo.Unavailable):
            c.wait_ready(timeout=0.2)


def test_deadline_exceeded(server):
    # A deadline already past (not 1 us ahead: gRPC's timers have ~1 ms
    # resolution, and a loopback call on an idle machine can answer first).
    with f2obo.Client(server.address, timeout=-1.0, retries=0) as c:
        e = raises(f2obo.DeadlineExceeded, lambda: c.list_sessions())
        assert e.code == grpc.StatusCode.DEADLINE_EXCEEDED


def test_watch_timeout_is_deadline_exceeded(client):
    s = client.create_session(**HPO)
    raises(f2obo.DeadlineExceeded, lambda: list(s.metrics(timeout=0.2)))


def test_a_reply_beyond_the_message_limit_says_what_to_do(start_server):
    """A decision larger than one message (y of 10,000 entries, 80 KB, over
    64 KiB): the server refuses it naming its size, its --max_message_bytes
    and what to do; a client whose own limit is the smaller says what to do
    too, where gRPC alone says only "Received message larger than max"."""
    small = start_server("--max_message_bytes=65536")
    with f2obo.Client(small.address) as c:
        s = c.create_session(family="quadratic", algorithm="f2obo", x_dim=2, y_dim=10000)
        raises(f2obo.ResourceExhausted, s.decision, "GetDecision: the reply is",
               "--max_message_bytes = 65536", "raise")
    default = start_server()
    with f2obo.Client(default.address, max_message_bytes=65536) as c:
        s = c.create_session(family="quadratic", algorithm="f2obo", x_dim=2, y_dim=10000)
        raises(f2obo.ResourceExhausted, s.decision, "larger than max",
               "Client(max_message_bytes=...)", "--max_message_bytes")
