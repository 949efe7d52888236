"""Exactly-once streaming over a bidirectional step RPC (Steps, StepsGroup).

Shared by Session.stream and Group.stream.  Requests carry their step
index t.  Up to `in_flight` requests are outstanding; each reply must
answer the oldest one.  When the stream breaks with UNAVAILABLE (server
restart, dropped connection), the engine waits for the server (`wait`, a
read retried until the server answers), opens a new stream and sends again every
request not yet answered, oldest first: an index the server had applied is
answered from its reply cache (marked `replayed`) and applied nothing, the
others are applied now.  So every step is applied exactly once and the
caller gets exactly one reply per request, in order.  The reply cache
holds the last 16 replies of a session, hence `in_flight` <= 16.
"""
from __future__ import annotations

import queue
import time
from collections import deque
from typing import Any, Callable, Deque, Iterator

import grpc

from . import errors

MAX_IN_FLIGHT = 16
_END = object()


def check_in_flight(in_flight: int) -> int:
    if not 1 <= in_flight <= MAX_IN_FLIGHT:
        raise ValueError("in_flight: %d is outside [1, %d] (the server's reply cache)"
                         % (in_flight, MAX_IN_FLIGHT))
    return in_flight


def exactly_once(open_call: Callable[[Iterator[Any]], Any], requests: Iterator[Any],
                 wait: Callable[[], None], in_flight: int = 1,
                 reconnects: int = 10, moved_seconds: float = 0.0) -> Iterator[Any]:
    """Yields the reply to each of `requests`, in order (see module doc).

    open_call(request_iterator) opens the RPC (returns the response
    iterator, a grpc.Call); wait() blocks until the server answers again or
    raises; `reconnects` bounds consecutive reconnections without progress,
    except those after the "moved" status (errors.is_moved: the session is
    being rebalanced), retried for up to `moved_seconds` without progress.
    """
    check_in_flight(in_flight)
    pending: Deque[Any] = deque()  # sent (or to be re-sent), not yet answered
    exhausted = False
    failures = 0
    backoff = 0.1
    moved_since = None  # first "moved" since the last reply
    while True:
        outbox: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        call = open_call(iter(outbox.get, _END))
        try:
            for request in pending:
                outbox.put(request)
            while True:
                while not exhausted and len(pending) < in_flight:
                    request = next(requests, _END)
                    if request is _END:
                        exhausted = True
                        break
                    pending.append(request)
                    outbox.put(request)
                if not pending:
                    break
                reply = next(call, _END)
                if reply is _END:
                    raise errors.Unavailable("the server ended the stream early")
                if reply.t != pending[0].t:
                    raise errors.Internal("stream reply for t = %d, expected t = %d"
                                          % (reply.t, pending[0].t))
                pending.popleft()
                failures = 0
                backoff = 0.1
                moved_since = None
                yield reply
            outbox.put(_END)
            for extra in call:
                raise errors.Internal("stream reply for t = %d after the last request"
                                      % extra.t)
            return
        except (grpc.RpcError, errors.Unavailable) as e:
            error = errors.from_rpc_error(e) if isinstance(e, grpc.RpcError) else e
            if not isinstance(error, errors.Unavailable):
                raise error from None
            moved = False
            if errors.is_moved(error) and moved_seconds > 0:
                now = time.monotonic()
                moved_since = now if moved_since is None else moved_since
                moved = now - moved_since + backoff <= moved_seconds
            if not moved and failures >= reconnects:
                raise error from None
        finally:
            outbox.put(_END)
            call.cancel()
        if not moved:
            failures += 1
        time.sleep(backoff)  # backoff before reconnecting
        backoff = min(2 * backoff, 1.0 if moved else 2.0)
        wait()
