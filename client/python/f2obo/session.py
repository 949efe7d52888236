"""A session handle: steps, streams, the decision, metrics, export."""
from __future__ import annotations

import time
from typing import Any, Iterable, Iterator, Optional

import grpc

from . import _stream, errors
from ._stubs import pb, transfer_pb2
from .batch import BatchLike, StepLike, step_request
from .fields import fill_message
from ._transport import Transport
from .views import Decision, SessionInfo, StepMetrics, StepResult



def skip_applied(items: Iterable[Any], first_t: int, next_t: int) -> Iterator[Any]:
    """(t, item) for the items from t = first_t on, leaving out t < next_t
    (the steps the server has already applied)."""
    t = first_t
    for item in items:
        if t >= next_t:
            yield t, item
        t += 1


class Session:
    """One online bilevel session on the server (from Client.create_session,
    Client.session or Client.import_session).

    The handle keeps the step index it expects next (`next_t`), fetched from
    the server on first use and advanced by each step; it is safe to use
    from one thread at a time (use one handle per thread).
    """

    def __init__(self, client: Transport, session_id: str, next_t: Optional[int] = None) -> None:
        self.client = client
        self.id = session_id
        self._next_t = next_t

    def __repr__(self) -> str:
        return "Session(%r)" % self.id

    @property
    def next_t(self) -> int:
        """The index the next step carries (asks the server if unknown)."""
        if self._next_t is None:
            self._next_t = self.info().next_t
        return self._next_t

    # ----------------------------------------------------------------- steps

    def step(self, upper: BatchLike = None, inner: BatchLike = None, *,
             t: Optional[int] = None, **request_fields: Any) -> StepResult:
        """Applies one time step: `upper` defines f_t, `inner` g_t.

        A batch is `(features, labels)` / `(features, targets)` with numpy
        or scipy.sparse features, or a mapping of Batch fields (see
        f2obo.batch).  `t` defaults to `next_t`.  Retried on UNAVAILABLE
        with the same t, so it is applied once even across a server
        restart.  Other keywords set StepRequest fields by name.

        Returns a StepResult: `x` (x_{t+1}), `t` and the round's report.
        Raises InvalidArgument (bad batch, naming the field; nothing
        changes), FailedPrecondition (t is not the session's next index;
        the handle then asks the server again on its next use), NotFound.
        """
        t = self.next_t if t is None else t
        request = step_request(pb.StepRequest, dict(request_fields, upper=upper, inner=inner),
                               "", session_id=self.id, t=t)
        try:
            reply = self.client._call("Step", request, retry=True)
        except errors.FailedPrecondition:
            self._next_t = None
            raise
        self._next_t = reply.t + 1
        return StepResult(reply)

    def stream(self, steps: Iterable[StepLike], *, first_t: Optional[int] = None,
               in_flight: int = 1, reconnects: int = 10) -> Iterator[StepResult]:
        """Streams steps over the bidirectional Steps RPC; yields one
        StepResult per step applied, in order.

        `steps` yields (upper, inner) pairs (or mappings of StepRequest
        fields); it is read lazily, one step ahead of the replies when
        `in_flight` = 1 (up to 16 requests may be outstanding, for
        throughput).  `first_t` is the index of the first item (default:
        the session's next_t); items the session has already applied are
        skipped, not sent, so a restarted script may replay its stream from
        the start.  A broken stream (UNAVAILABLE: dropped connection,
        server restart) is reopened, waiting up to the client's
        reconnect_timeout for the server, and unanswered steps are sent
        again: the server answers an applied index from its reply cache
        (`replayed` = True), so no step is lost or applied twice.
        """
        _stream.check_in_flight(in_flight)
        next_t = self.info().next_t
        first = next_t if first_t is None else first_t
        requests = (step_request(pb.StepRequest, item, "step t=%d: " % t,
                                 session_id=self.id, t=t)
                    for t, item in skip_applied(steps, first, next_t))
        replies = _stream.exactly_once(
            lambda outbox: self.client.stub.Steps(outbox, metadata=self.client.metadata(self.id)),
            requests, self._wait_for_server, in_flight, reconnects,
            self.client.moved_retry_seconds)
        return self._results(replies)

    def _results(self, replies: Iterator["pb.StepReply"]) -> Iterator[StepResult]:
        for reply in replies:
            self._next_t = reply.t + 1
            yield StepResult(reply)

    def _wait_for_server(self) -> None:
        self.client._call("GetSession", pb.GetSessionRequest(session_id=self.id), retry=True)

    # ----------------------------------------------------------------- reads

    def info(self) -> SessionInfo:
        """The session's spec (defaults filled in), next_t, totals and metric sums."""
        info = self.client.get_session(self.id)
        self._next_t = info.next_t
        return info

    def decision(self) -> Decision:
        """The current decision x_t (and y_t, t, lambda_t) as numpy arrays."""
        return Decision(self.client._call("GetDecision",
                                          pb.GetDecisionRequest(session_id=self.id), retry=True))

    def metrics(self, after_t: int = 0, until_t: Optional[int] = None,
                timeout: Optional[float] = None) -> "MetricsWatch":
        """Per-step metrics as they are published (WatchMetrics): an iterator
        of StepMetrics, in step order, from t = after_t + 1 (the server keeps
        the last 1024; 0 = the oldest it has).  It ends after step `until_t`
        if given, else runs until cancel() (or `timeout` seconds, which
        raise DeadlineExceeded).  A dropped connection is reopened (as the
        client's retries allow) after the last step received.  Use as a context manager to cancel on exit.
        """
        return MetricsWatch(self, after_t, until_t, timeout)

    def export(self) -> "pb.SessionExport":
        """The complete session (spec, state, RNG, reply cache), to move it to
        another server with Client.import_session (`.SerializeToString()`
        gives bytes to store).  One message: a session larger than the
        server's --max_message_bytes is refused (ResourceExhausted naming
        ExportSessionStream); use export_chunks()."""
        return self.client._call("ExportSession", pb.ExportSessionRequest(session_id=self.id),
                                 retry=True)

    def export_chunks(self, chunk_bytes: int = 0) -> Iterator["transfer_pb2.SessionChunk"]:
        """The complete session as a stream of chunks (ExportSessionStream),
        whatever its size: give them to Client.import_chunks as they come,
        or keep them (each `.SerializeToString()`, e.g. length-prefixed in a
        file).  The server holds one chunk at a time, and so does this
        iterator; `chunk_bytes` asks for smaller chunks (0: the server's
        default, 1 MiB).  A snapshot: steps applied while it runs are not
        in it."""
        request = transfer_pb2.ExportSessionStreamRequest(session_id=self.id,
                                                          chunk_bytes=chunk_bytes)
        try:
            yield from self.client.stub.ExportSessionStream(
                request, metadata=self.client.metadata(self.id))
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e) from None

    # ------------------------------------------- checkpoints, rollback, fork

    def checkpoint(self) -> SessionInfo:
        """Keeps a checkpoint of the current state now (besides the server's
        every --checkpoint_every steps); `info().checkpoints` lists the
        steps after which one is kept."""
        info = SessionInfo(self.client._call(
            "CheckpointSession", pb.CheckpointSessionRequest(session_id=self.id)))
        self._next_t = info.next_t
        return info

    def rollback(self, to_t: int) -> SessionInfo:
        """Undoes the steps after `to_t` (a kept checkpoint, or next_t - 1):
        the session continues at t = to_t + 1, as if it had never seen them
        (e.g. a poisoned stretch of data).  Not retried: its outcome is
        checked with info()."""
        info = SessionInfo(self.client._call(
            "RollbackSession", pb.RollbackSessionRequest(session_id=self.id, to_t=to_t)))
        self._next_t = info.next_t
        return info

    def fork(self, new_session_id: str = "", *, at_t: Optional[int] = None,
             algorithm: str = "", **options: Any) -> "Session":
        """A new session continuing from this one's state (its current one,
        or checkpoint `at_t`), e.g. a challenger with another algorithm or
        other options (keywords: AlgorithmOptions fields) run on the same
        stream from here on.  This session is unchanged."""
        request = pb.ForkSessionRequest(session_id=self.id, new_session_id=new_session_id,
                                        algorithm=algorithm)
        if at_t is not None:
            request.at_t = at_t
        fill_message(request.options, dict(options), "fork()")
        info = self.client._call("ForkSession", request)
        return Session(self.client, info.session_id, info.next_t)

    def delete(self) -> None:
        self.client.delete_session(self.id)


class MetricsWatch:
    """Iterator over a session's WatchMetrics stream (see Session.metrics)."""

    def __init__(self, session: Session, after_t: int, until_t: Optional[int],
                 timeout: Optional[float]) -> None:
        self._session = session
        self._last_t = after_t
        self._until_t = until_t
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._call: Any = None
        self._done = False
        self._reconnects = 0

    def _open(self) -> None:
        remaining = None if self._deadline is None else max(0.0, self._deadline - time.monotonic())
        client = self._session.client
        self._call = client.stub.WatchMetrics(
            # until_t: the server ends the stream there, also when it holds no
            # message for the last steps (before a restart).
            pb.WatchMetricsRequest(session_id=self._session.id, after_t=self._last_t,
                                   until_t=self._until_t or 0),
            metadata=client.metadata(self._session.id), timeout=remaining)

    def __iter__(self) -> "MetricsWatch":
        return self

    def __next__(self) -> StepMetrics:
        while True:
            if self._done or (self._until_t is not None and self._last_t >= self._until_t):
                self.cancel()
                raise StopIteration
            if self._call is None:
                self._open()
            try:
                m = next(self._call)
            except StopIteration:
                self._done = True
                continue
            except grpc.RpcError as e:
                self._call = None
                error = errors.from_rpc_error(e)
                client = self._session.client
                if isinstance(error, errors.Unavailable) and self._reconnects < client.retries:
                    self._reconnects += 1  # reopen after the last step received
                    client._wait_ready(client.reconnect_timeout, error)
                    continue
                self._done = True
                raise error from None
            self._reconnects = 0
            self._last_t = m.t
            return StepMetrics(m)

    def cancel(self) -> None:
        """Ends the stream (the server sees a cancelled watch)."""
        self._done = True
        if self._call is not None:
            self._call.cancel()
            self._call = None

    def __enter__(self) -> "MetricsWatch":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.cancel()
