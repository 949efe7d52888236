"""The connection: `Client(address, token=None, tls=...)`.

Every call goes through `Client._call`, which adds the metadata (bearer
token; the `x-f2obo-session` routing header a session-pinning proxy reads,
see client/session_routing.h), applies the per-call timeout, retries where
that is safe, and turns grpc.RpcError into the f2obo exception of its
status code.  Safe to retry: reads, and steps, which the server applies
exactly once per index (a retried index is answered from its reply cache).
A retry first waits for the channel to connect again, so a step survives a
server restart of up to `reconnect_timeout` seconds.

A Client may be shared by threads (gRPC channels and stubs are).
"""
from __future__ import annotations

import dataclasses
import os
import time
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence,
                    Tuple, Union)

import grpc

from . import errors
from ._routing import routed_id, routing_key
from ._stubs import pb, pb_grpc, transfer_pb2
from .spec import FlatFields
from .group import Group
from .session import Session
from .views import GroupInfo, SessionInfo

_SESSION_HEADER = "x-f2obo-session"


@dataclasses.dataclass(frozen=True)
class TLS:
    """TLS settings: PEM file paths (or PEM bytes).  `ca`: roots to trust
    (None: the system's); `cert` + `key`: a client certificate (mutual TLS);
    `server_name`: the name to check in the server certificate when it is
    not the address's host."""
    ca: Union[str, bytes, None] = None
    cert: Union[str, bytes, None] = None
    key: Union[str, bytes, None] = None
    server_name: Optional[str] = None

    def credentials(self) -> grpc.ChannelCredentials:
        if (self.cert is None) != (self.key is None):
            raise ValueError("TLS: cert and key go together (mutual TLS needs both)")
        return grpc.ssl_channel_credentials(
            root_certificates=_pem(self.ca), private_key=_pem(self.key),
            certificate_chain=_pem(self.cert))


def _pem(value: Union[str, bytes, None]) -> Optional[bytes]:
    if value is None or isinstance(value, bytes):
        return value
    with open(os.fspath(value), "rb") as f:
        return f.read()


_SESSION_FIELDS = FlatFields(pb.SessionSpec.DESCRIPTOR)
_MEMBER_FIELDS = FlatFields(pb.GroupMember.DESCRIPTOR)


def session_spec(what: str, values: Mapping[str, Any]) -> "pb.SessionSpec":
    """A SessionSpec from keyword arguments (see f2obo.spec)."""
    spec = pb.SessionSpec()
    _SESSION_FIELDS.fill(spec, values, what)
    return spec


def _member(name: str, value: Any, what: str) -> "pb.GroupMember":
    """A GroupMember from an algorithm name, a mapping (algorithm and option
    keywords) or a GroupMember."""
    if isinstance(value, pb.GroupMember):
        m = pb.GroupMember()
        m.CopyFrom(value)
        if name:
            m.name = name
        return m
    if isinstance(value, str):
        value = {"algorithm": value}
    if not isinstance(value, Mapping):
        raise TypeError("%s: member %r: expected an algorithm name, a mapping or a "
                        "GroupMember, got %s" % (what, name, type(value).__name__))
    m = pb.GroupMember(name=name)
    _MEMBER_FIELDS.fill(m, value, "%s: member %r" % (what, name))
    return m


class Client:
    """A connection to an f2obo server.

    Args:
      address: "host:port" of the server (e.g. "127.0.0.1:50051").
      token: bearer token (the server's --token_file), sent on every call.
      tls: False (plaintext), True (TLS with the system's roots), a `TLS`
        (roots, client certificate, server name) or grpc.ChannelCredentials.
      timeout: seconds allowed for each attempt of a unary call (None: no
        limit); a call that runs out raises DeadlineExceeded, not retried.
      retries: attempts after the first, for calls safe to repeat, after
        UNAVAILABLE.
      reconnect_timeout: how long each retry waits for the server to come
        back before raising Unavailable.
      moved_retry_seconds: how long a step (and a stream) keeps retrying the
        "moved" status, UNAVAILABLE "session '<id>' is moving to replica
        ...": a rebalance, from its fence until the proxy routes the key to
        the new owner (deploy/README.md's runbook, steps 4-5), i.e. as long
        as the whole `f2obo-cli rebalance` run.  These retries do not use up
        `retries`.  0: "moved" counts like any UNAVAILABLE.
      max_message_bytes: largest message sent or received.
      channel_options: extra grpc channel arguments.

    Use it as a context manager, or call close().
    """

    def __init__(self, address: str, token: Optional[str] = None,
                 tls: Union[bool, TLS, grpc.ChannelCredentials] = False, *,
                 timeout: Optional[float] = 120.0, retries: int = 5,
                 reconnect_timeout: float = 60.0, moved_retry_seconds: float = 300.0,
                 max_message_bytes: int = 64 << 20,
                 channel_options: Sequence[Tuple[str, Any]] = ()) -> None:
        self.address = address
        self.timeout = timeout
        self.retries = retries
        self.reconnect_timeout = reconnect_timeout
        self.moved_retry_seconds = moved_retry_seconds
        options: List[Tuple[str, Any]] = [
            ("grpc.max_send_message_length", max_message_bytes),
            ("grpc.max_receive_message_length", max_message_bytes),
            # Come back quickly after a server restart (the default backoff
            # grows to 120 s).
            ("grpc.initial_reconnect_backoff_ms", 100),
            ("grpc.min_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", 2000),
        ]
        if isinstance(tls, TLS) and tls.server_name:
            options.append(("grpc.ssl_target_name_override", tls.server_name))
        options += list(channel_options)
        if tls is False or tls is None:
            self._channel = grpc.insecure_channel(address, options=options)
        else:
            if tls is True:
                creds = grpc.ssl_channel_credentials()
            elif isinstance(tls, TLS):
                creds = tls.credentials()
            elif isinstance(tls, grpc.ChannelCredentials):
                creds = tls
            else:
                raise TypeError("tls: expected a bool, f2obo.TLS or grpc.ChannelCredentials")
            self._channel = grpc.secure_channel(address, creds, options=options)
        self._metadata: Tuple[Tuple[str, str], ...] = (
            (("authorization", "Bearer " + token),) if token else ())
        self.stub = pb_grpc.F2oboStub(self._channel)

    # -------------------------------------------------------------- plumbing

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return "Client(%r)" % self.address

    def metadata(self, session_id: str = "") -> Tuple[Tuple[str, str], ...]:
        """Call metadata: the token and, for a session or group, its routing key."""
        if session_id:
            return self._metadata + ((_SESSION_HEADER, routing_key(session_id)),)
        return self._metadata

    def _call(self, method: str, request: Any, retry: bool = False) -> Any:
        """One unary call with metadata (the routing key of the session or
        group the request names, as its RPC declares), timeout, safe
        retries, mapped errors."""
        rpc: Callable[..., Any] = getattr(self.stub, method)
        session_id = routed_id(method, request)
        attempt = 0
        backoff = 0.05
        moved_deadline = time.monotonic() + self.moved_retry_seconds
        while True:
            try:
                return rpc(request, timeout=self.timeout, metadata=self.metadata(session_id))
            except grpc.RpcError as e:
                error = errors.from_rpc_error(e)
                if not retry or not isinstance(error, errors.Unavailable):
                    raise error from None
                moved = (errors.is_moved(error)
                         and time.monotonic() + backoff < moved_deadline)
                if not moved and attempt >= self.retries:
                    raise error from None
            time.sleep(backoff)  # backoff before the retry
            backoff = min(2 * backoff, 1.0 if moved else 2.0)
            if not moved:
                attempt += 1
            self._wait_ready(self.reconnect_timeout, error)

    def _wait_ready(self, timeout: float, error: Optional[errors.Error] = None) -> None:
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            raise errors.Unavailable("no connection to %s within %g s%s" % (
                self.address, timeout, " (%s)" % error.message if error else "")) from None

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Blocks until the channel is connected; Unavailable after `timeout`."""
        self._wait_ready(timeout)

    # -------------------------------------------------------------- sessions

    def create_session(self, family: Any = None, algorithm: Optional[str] = None, *,
                       session_id: str = "", **options: Any) -> Session:
        """Creates a session and returns its handle.

        `family` is a family name ("quadratic", "ridge_hpo", "logistic_hpo",
        "loss_tuning", ...) or a FamilySpec mapping; every other keyword is
        a field of SessionSpec or of one of its sections, by name: family
        fields (features, classes, x_dim, y_dim, mu0, ...), algorithm
        options (lambda1, gamma, alpha, alpha_auto, inner_steps, ...), the
        constraint (box=(lo, hi), ball=radius or (radius, center),
        unconstrained=True), metrics (exact_every), x0, y0, z0, seed,
        x_groups (a list of {"name", "size"}: display names of x's entries).
        Defaults are the server's (the paper's settings);
        `session.info().spec` shows them filled in.  An option the
        session's algorithm does not read (with no `algorithm`, the class
        default's) is refused with InvalidArgument naming both.

        Raises TypeError naming an unknown keyword; InvalidArgument,
        AlreadyExists, ResourceExhausted from the server.
        """
        values: Dict[str, Any] = {}
        if family is not None:
            values["family"] = family
        if algorithm is not None:
            values["algorithm"] = algorithm
        values.update(options)
        spec = session_spec("create_session()", values)
        info = self._call("CreateSession",
                          pb.CreateSessionRequest(session_id=session_id, spec=spec))
        return Session(self, info.session_id, info.next_t)

    def session(self, session_id: str) -> Session:
        """The handle of an existing session (no call is made)."""
        return Session(self, session_id)

    def get_session(self, session_id: str) -> SessionInfo:
        return SessionInfo(self._call("GetSession", pb.GetSessionRequest(session_id=session_id),
                                      retry=True))

    def list_sessions(self) -> List[SessionInfo]:
        reply = self._call("ListSessions", pb.ListSessionsRequest(), retry=True)
        return [SessionInfo(s) for s in reply.sessions]

    def delete_session(self, session_id: str) -> None:
        self._call("DeleteSession", pb.DeleteSessionRequest(session_id=session_id))

    def import_session(self, exported: Union["pb.SessionExport", bytes],
                       session_id: str = "") -> Session:
        """Creates a session from `Session.export()` (the message or its
        bytes); it continues exactly where the exported one stood.
        `session_id` renames it (default: the exported id)."""
        if isinstance(exported, (bytes, bytearray, memoryview)):
            exported = pb.SessionExport.FromString(bytes(exported))
        info = self._call("ImportSession",
                          pb.ImportSessionRequest(session_id=session_id, session=exported))
        return Session(self, info.session_id, info.next_t)

    def import_chunks(self, chunks: Iterable["transfer_pb2.SessionChunk"],
                      session_id: str = "") -> Session:
        """Creates a session from `Session.export_chunks()` (ImportSessionStream),
        sending each chunk as `chunks` yields it: for sessions of any size.
        All or nothing: if the chunks stop early, are damaged (the stream
        ends with a checksum) or fail a check (InvalidArgument naming the
        field, as import_session), the server keeps nothing of them.
        `session_id` renames it (default: the exported id)."""
        # The routing header goes out when the call opens: the new id, or
        # the exported one, which the first chunk names.
        it = iter(chunks)
        first = next(it, None)
        if first is None:
            raise errors.InvalidArgument("import_chunks(): no chunk to import")
        routed = session_id or first.begin.session_id

        def requests() -> Iterator["transfer_pb2.ImportSessionStreamRequest"]:
            yield transfer_pb2.ImportSessionStreamRequest(session_id=session_id, chunk=first)
            for chunk in it:
                yield transfer_pb2.ImportSessionStreamRequest(chunk=chunk)

        try:
            info = self.stub.ImportSessionStream(requests(), timeout=self.timeout,
                                                 metadata=self.metadata(routed))
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e) from None
        return Session(self, info.session_id, info.next_t)

    # ---------------------------------------------------------------- groups

    def create_group(self, group_id: str, members: Union[Mapping[str, Any], Iterable[Any]],
                     family: Any = None, **shared: Any) -> Group:
        """Creates a group of sessions stepped side by side on the same data.

        `members` maps each member's name to its algorithm name, or to a
        mapping of its algorithm and option keywords::

            client.create_group("cmp", family="loss_tuning", features=784, classes=10,
                                gamma=0.01, members={
                                    "f2obo": "f2obo",
                                    "af2obo": {"algorithm": "af2obo",
                                               "max_inner_iterations": 30}})

        (a sequence of mappings with a "name" key, or of GroupMember
        messages, works too).  The other keywords form the shared
        SessionSpec as in create_session; a shared option reaches the
        members whose algorithm reads it (one no member reads is refused),
        and a member's own options, which its algorithm must read, win.
        """
        values: Dict[str, Any] = {}
        if family is not None:
            values["family"] = family
        values.update(shared)
        spec = session_spec("create_group()", values)
        if isinstance(members, Mapping):
            items = list(members.items())
        else:
            items = []
            for m in members:
                if isinstance(m, pb.GroupMember):
                    items.append((m.name, m))
                elif isinstance(m, Mapping) and "name" in m:
                    rest = dict(m)
                    items.append((rest.pop("name"), rest))
                else:
                    raise TypeError("create_group(): a member in a sequence must be a "
                                    "mapping with a 'name' or a GroupMember")
        request = pb.CreateGroupRequest(group_id=group_id, spec=spec)
        for name, value in items:
            request.members.append(_member(name, value, "create_group()"))
        info = self._call("CreateGroup", request)
        return Group(self, group_id, GroupInfo(info))

    def group(self, group_id: str) -> Group:
        """The handle of an existing group (no call is made)."""
        return Group(self, group_id)

    def get_group(self, group_id: str) -> GroupInfo:
        return GroupInfo(self._call("GetGroup", pb.GetGroupRequest(group_id=group_id),
                                    retry=True))

    def delete_group(self, group_id: str) -> List[str]:
        """Deletes a group and its members; returns the deleted session ids."""
        reply = self._call("DeleteGroup", pb.DeleteGroupRequest(group_id=group_id))
        return list(reply.session_ids)
