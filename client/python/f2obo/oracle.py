"""Oracle sessions: f and g computed here, the algorithm run by the server.

A session of family "oracle" holds only dimensions and the state (x, y, z,
lambda, the RNG); each step's data stays in this process.  During a step
the server asks for the values and gradients its round needs (f on the
upper batch, g on the inner batch, at points it names) and this module
answers them with your function:

    import numpy as np, f2obo

    client = f2obo.Client("127.0.0.1:50051")
    session = client.create_session(family="oracle", x_dim=d1, y_dim=d2, algorithm="f2obo",
                                    box=(0.0, 0.1))   # step sizes automatic

    def evaluate(q):               # q: an OracleQuery (below)
        X, labels = (X_val, y_val) if q.function == "f" else (X_tr, y_tr)
        if q.rows is not None:     # the server's mini-batch (sf2obo)
            X, labels = X[q.rows], labels[q.rows]
        value, gx, gy = my_loss_and_grads(q.function, q.x, q.y, X, labels)
        return value, gx, gy       # numpy float64; gx / gy only if asked (else None)

    with f2obo.OracleStream(client, session.id) as stream:
        result = stream.step(evaluate, upper_rows=len(X_val), inner_rows=len(X_tr))
        result.x                   # x_{t+1}, as Session.step's StepResult
        stream.y[0]                # y_{t+1}, sent with the reply (no GetDecision)

Multi-task sessions (family "multitask_oracle"): `step(evaluate,
tasks=[(task, upper_rows, inner_rows), ...])` instead of upper_rows and
inner_rows (a 4th entry: the task's sampling probability, as
TaskBatch.probability); each query names its task (q.task), whose batches
its rows index.  Simple bilevel sessions ("simple_oracle"): f and g are
functions of x alone, q.y is None and grad_y is never asked; ir_scg is
served (its linear minimization oracle stays on the server).

Contract of `evaluate(q)`: return (value, grad_x, grad_y) of f (q.function
== "f", the mean over the upper batch's rows) or g ("g", the inner batch)
at (q.x, q.y), averaged over q.rows (None: every row; else an int64 array
of row indices, repeats counted).  Compute only what is asked
(q.want_value, q.want_grad_x, q.want_grad_y); return None for the rest.
Gradients are 1-D arrays of x_dim / y_dim float64 (float32 is converted).
g must be strongly convex in y (add a ridge term if your loss is not).
q.x and q.y are read-only views of the server's points; copy before
changing them.

`evaluate_many(queries)` may replace `evaluate` when your code can batch
(e.g. one forward pass for several points): it returns one
(value, grad_x, grad_y) per query, in order.

Exactly-once: step t is applied once; a retried t answers from the
server's reply cache without asking anything.  A step whose stream
breaks with UNAVAILABLE (a dropped connection, a server restart) is
retried with the same t on a new stream, waiting for the server as the
client's `retries` and `reconnect_timeout` allow (the "moved" status of
a rebalance up to its `moved_retry_seconds`): the server discarded the
broken round, or applied it and answers the retry from its cache
(`replayed`).  If this process dies
mid-round the round is discarded and the session is unchanged: a new
process resumes from the server's iterates (`Session.decision()`, which
carries x, y and t).  Errors: a wrong size, a non-finite number, an answer
to a question not asked raise f2obo.InvalidArgument naming the field; a
client slower than the server's round budget gets ResourceExhausted, one
past its deadline DeadlineExceeded; the stream is then closed and the next
step() opens a new one.

Wire protocol (proto/f2obo/v1/oracle.proto, OracleClientMessage): all of a
round's independent queries come in one request; each point is sent once
per stream and named by id afterwards (this module keeps them until the
server says forget); vectors are raw little-endian float64 bytes (the
answers' float32 with `stream.float32 = True`: half the bytes up, the
trajectory then equal to a float64 stream's to the gradients' rounding to
float32, not to 1e-12).  This
module speaks the recipe protocol (docs/oracle-protocol.md) where the
server serves it: the y-gradients it answered are kept, and the server
names each new y or z as `base + coef * kept gradient`, computed here in
float64 as numpy rounds it (`r += coef * a`) instead of sent; f's and g's
gradients in y at the y-update's point are answered as their sum
(grad_y f + lambda grad_y g), one vector instead of two.  `evaluate` sees
the same queries either way (a fused answer asks it for f's and g's
gradients and adds them).
"""
from __future__ import annotations

import dataclasses
import queue
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

import grpc
import numpy as np

from . import errors
from ._stubs import pb
from .views import StepResult

if TYPE_CHECKING:
    from .client import Client

Answer = Tuple[Optional[float], Optional[np.ndarray], Optional[np.ndarray]]
_END = object()
_F64 = np.dtype("<f8")
_F32 = np.dtype("<f4")


@dataclasses.dataclass(frozen=True)
class OracleQuery:
    """One question of the server: `function` ("f" or "g") at (x, y) on
    `rows` (None: all rows of that batch); `task`: a multi-task session's
    task (None in the other classes); y is None in simple bilevel
    sessions."""
    id: int
    function: str
    x: np.ndarray
    y: Optional[np.ndarray]
    rows: Optional[np.ndarray]
    want_value: bool
    want_grad_x: bool
    want_grad_y: bool
    task: Optional[int] = None


def _bytes(v: Optional[np.ndarray], want: bool, what: str, dtype: np.dtype = _F64) -> bytes:
    if not want:
        return b""
    if v is None:
        raise ValueError("evaluate: %s was asked but None was returned" % what)
    return np.ascontiguousarray(v, dtype=dtype).reshape(-1).tobytes()


def _array(v: Optional[np.ndarray], what: str, float32: bool = False) -> np.ndarray:
    """v as a flat float64 array; float32 kept as such on a float32 wire
    (the fused sum is then computed in float32, the model's precision)."""
    if v is None:
        raise ValueError("evaluate: %s was asked but None was returned" % what)
    v = np.asarray(v)
    keep32 = float32 and v.dtype == np.float32
    return np.ascontiguousarray(v, dtype=_F32 if keep32 else _F64).reshape(-1)


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _len_field(number: int, length: int) -> bytes:
    """The key and length of a length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(length)


# OracleAnswer's fields of a y-sized gradient (proto/f2obo/v1/oracle.proto),
# by (fused, float32).
_Y_FIELD = {(False, False): 4, (True, False): 5, (False, True): 7, (True, True): 8}


def _serialize(message: Any) -> bytes:
    """OracleSteps' request serializer: an answer comes encoded already."""
    return message if isinstance(message, bytes) else message.SerializeToString()


class OracleStream:
    """One OracleSteps stream to the server, for the steps of one session.

    `step()` runs one step; the stream stays open between steps (points the
    server sent stay cached).  Use from one thread; close() (or `with`)
    ends the stream.

    After a step, `y` holds the lower-level variables it left, sent with
    the server's reply: [y_{t+1}] for a bilevel session, y_i of each task
    of the step (in `tasks` order) for a multi-task one, [] for a simple
    bilevel one; None after a replayed step (ask Session.decision()).
    """

    def __init__(self, client: "Client", session_id: str, *,
                 timeout: Optional[float] = None) -> None:
        self.client = client
        self.session_id = session_id
        self.timeout = timeout  # per stream (gRPC deadline), None: none
        self._next_t: Optional[int] = None
        self._outbox: Optional["queue.SimpleQueue[Any]"] = None
        self._call: Any = None
        self._points: Dict[int, np.ndarray] = {}
        self._open_tasks: List[Any] = []
        # The lower-level variables the last step left (see `y`).
        self.y: Optional[List[np.ndarray]] = None
        # Ask for the recipe protocol (module doc); False: points as values.
        self.recipes = True
        # Answer gradients as float32 (OracleStepOpen.float32: half the
        # bytes up; the server widens them, its state stays float64; the
        # trajectory then differs from a float64 one's by the gradients'
        # rounding to float32).  False (default): float64.
        self.float32 = False
        # Counters (what a benchmark reads): "requests", "recipes" (points
        # named by recipe), "down_bytes" (the server's messages), "up_bytes"
        # (this client's), summed over steps.
        self.stats: Dict[str, int] = {}

    @property
    def next_t(self) -> int:
        if self._next_t is None:
            self._next_t = self.client.get_session(self.session_id).next_t
        return self._next_t

    def _open(self) -> None:
        self._outbox = queue.SimpleQueue()
        self._points = {}
        # The generated stub's method, but answers may come as their bytes
        # (_answer encodes a y-sized gradient with one copy, not three).
        steps = self.client._channel.stream_stream(
            "/f2obo.v1.F2obo/OracleSteps", request_serializer=_serialize,
            response_deserializer=pb.OracleServerMessage.FromString)
        self._call = steps(
            iter(self._outbox.get, _END), metadata=self.client.metadata(self.session_id),
            timeout=self.timeout)

    def close(self) -> None:
        if self._outbox is not None:
            self._outbox.put(_END)
        if self._call is not None:
            self._call.cancel()
        self._call = self._outbox = None

    def __enter__(self) -> "OracleStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def step(self, evaluate: Optional[Callable[[OracleQuery], Answer]] = None, *,
             upper_rows: int = 0, inner_rows: int = 0, t: Optional[int] = None,
             evaluate_many: Optional[Callable[[List[OracleQuery]], Sequence[Answer]]] = None,
             tasks: Optional[Sequence[Sequence[Any]]] = None) -> StepResult:
        """Runs step t (default: the next) answering the server's queries
        with `evaluate` (or `evaluate_many`); returns its StepResult.
        `tasks` (multi-task sessions): (task, upper_rows, inner_rows[,
        probability]) per task of the step, instead of upper_rows and
        inner_rows.  Retried on UNAVAILABLE with the same t (module doc).
        FailedPrecondition (t is not the session's next index): the next
        step asks the server for its index again."""
        if (evaluate is None) == (evaluate_many is None):
            raise ValueError("step: give exactly one of evaluate, evaluate_many")
        open_tasks = [pb.OracleTask(task=int(k[0]), upper_rows=int(k[1]), inner_rows=int(k[2]),
                                    probability=float(k[3]) if len(k) > 3 else 0.0)
                      for k in (tasks or [])]
        if evaluate_many is None:
            evaluate_many = lambda qs: [evaluate(q) for q in qs]  # noqa: E731
        t = self.next_t if t is None else t
        attempt, backoff = 0, 0.1
        moved_deadline = time.monotonic() + self.client.moved_retry_seconds
        while True:
            try:
                return self._step_once(evaluate_many, upper_rows, inner_rows, t, open_tasks)
            except errors.FailedPrecondition:
                self._next_t = None
                raise
            except errors.Unavailable as error:
                moved = errors.is_moved(error) and time.monotonic() + backoff < moved_deadline
                if not moved and attempt >= self.client.retries:
                    raise
                time.sleep(backoff)  # backoff before the retry
                backoff = min(2 * backoff, 1.0 if moved else 2.0)
                if not moved:
                    attempt += 1
                self.client._wait_ready(self.client.reconnect_timeout, error)

    def _step_once(self, evaluate_many: Callable[[List[OracleQuery]], Sequence[Answer]],
                   upper_rows: int, inner_rows: int, t: int,
                   open_tasks: List[Any]) -> StepResult:
        self._open_tasks = open_tasks
        self.y = None
        if self._call is None:
            self._open()
        self._outbox.put(pb.OracleClientMessage(open=pb.OracleStepOpen(
            session_id=self.session_id, t=t, upper_rows=upper_rows, inner_rows=inner_rows,
            tasks=open_tasks, recipes=self.recipes, float32=self.float32)))
        try:
            while True:
                message = next(self._call, _END)
                if message is _END:
                    raise errors.Unavailable("the server ended the oracle stream mid-step")
                kind = message.WhichOneof("kind")
                self._count("down_bytes", message.ByteSize())
                if kind == "done":
                    self._next_t = message.done.t + 1
                    self.y = None if message.done.replayed else [
                        self._done_y(p) for p in message.y]
                    return StepResult(message.done)
                if kind == "error":
                    raise errors.from_number(message.error.code, message.error.message)
                answer = self._answer(message.request, evaluate_many)
                self._count("requests", 1)
                self._count("recipes", len(message.request.recipes))
                self._count("up_bytes", len(answer))
                self._outbox.put(answer)
        except grpc.RpcError as e:
            self.close()
            raise errors.from_rpc_error(e) from None
        except BaseException:
            self.close()  # the round is discarded; the next step opens a new stream
            raise

    def _count(self, key: str, n: int) -> None:
        self.stats[key] = self.stats.get(key, 0) + n

    def _done_y(self, p: "pb.OraclePoint") -> np.ndarray:
        """A y of `done`: a held point, or values (kept under p.id if given)."""
        if not p.values:
            return self._points[p.id].copy()
        v = np.frombuffer(p.values, _F64)
        if p.id:
            self._points[p.id] = v
        return v.copy()

    def _answer(self, request: "pb.OracleRequest",
                evaluate_many: Callable[[List[OracleQuery]], Sequence[Answer]]
                ) -> bytes:
        for p in request.points:
            v = np.frombuffer(p.values, dtype=_F64)
            self._points[p.id] = v  # read-only: a view of the message's bytes
        for r in request.recipes:
            # base + coef * a per term: the product rounded, then the sum
            # (as `v += coef * a`), without a copy of the base or a
            # temporary per term beyond the first.
            # A float32 answer kept as sent is widened exactly by the
            # float64 loop (dtype=), as the server widens it.
            v: Optional[np.ndarray] = None
            for term in r.terms:
                if v is None:
                    v = np.multiply(self._points[term.point], term.coef, dtype=_F64)
                    np.add(self._points[r.base], v, out=v)
                else:
                    v += np.multiply(self._points[term.point], term.coef, dtype=_F64)
            if v is None:
                v = self._points[r.base].copy()
            v.flags.writeable = False
            self._points[r.id] = v
        tasks = len(self._open_tasks) > 0

        def rows(all_rows: bool, listed: Any) -> Optional[np.ndarray]:
            return None if all_rows else np.asarray(listed, dtype=np.int64)

        queries = [OracleQuery(
            id=q.id, function="f" if q.function == pb.OracleQuery.F else "g",
            x=self._points[q.x], y=self._points[q.y] if q.y else None,
            rows=rows(q.all_rows, q.rows), want_value=q.value, want_grad_x=q.grad_x,
            want_grad_y=q.grad_y or q.fused_y, task=q.task if tasks else None)
            for q in request.queries]
        # A fused answer's g part: g's gradient in y at the same point and
        # rows, from a query of g there (asked for more) or one of its own.
        g_part: Dict[int, int] = {}
        for i, q in enumerate(request.queries):
            if not q.fused_y:
                continue
            g_rows = rows(q.g_all_rows, q.g_rows)
            j = next((j for j, o in enumerate(request.queries)
                      if o.function == pb.OracleQuery.G and o.x == q.x and o.y == q.y
                      and o.task == q.task and not o.grad_y and j not in g_part.values()
                      and o.all_rows == q.g_all_rows and list(o.rows) == list(q.g_rows)), None)
            if j is None:
                j = len(queries)
                queries.append(OracleQuery(
                    id=0, function="g", x=queries[i].x, y=queries[i].y, rows=g_rows,
                    want_value=False, want_grad_x=False, want_grad_y=True,
                    task=queries[i].task))
            else:
                queries[j] = dataclasses.replace(queries[j], want_grad_y=True)
            g_part[i] = j
        results = evaluate_many(queries)
        if len(results) != len(queries):
            raise ValueError("evaluate_many: %d answers to %d queries"
                             % (len(results), len(queries)))
        # The server says whether it reads float32 (a server that predates
        # the float32 wire never does): asked for and acknowledged.
        f32 = self.float32 and request.float32
        wire = _F32 if f32 else _F64
        # Each answer's small fields by protobuf, its y-sized gradient
        # appended as the field's key, length and the array's own bytes
        # (fields may come in any order), the message joined once: one copy
        # of the gradient (tobytes, the field's set and the serialization
        # were three).
        encoded: List[Tuple[bytes, bytes, Any, int]] = []
        for i, q in enumerate(request.queries):
            value, gx, gy = results[i]
            a = pb.OracleAnswer(query=q.id)
            if q.value:
                a.value = float(value)
            if q.fused_y:
                gf = _array(gy, "f's grad_y", f32)
                gg = _array(results[g_part[i]][2], "g's grad_y", f32)
                # The product rounded, then the sum (in float32 when both
                # parts are: the wire rounds to it anyway).
                gy = np.multiply(gg, gf.dtype.type(q.fuse_g))
                np.add(gf, gy, out=gy)
            if f32:
                a.grad_x_f32 = _bytes(gx, q.grad_x, "grad_x", _F32)
            else:
                a.grad_x = _bytes(gx, q.grad_x, "grad_x")
            y: Any = b""
            key = b""
            if q.grad_y or q.fused_y:
                if gy is None:
                    raise ValueError("evaluate: grad_y was asked but None was returned")
                y = memoryview(np.ascontiguousarray(gy, dtype=wire).reshape(-1)).cast("B")
                key = _len_field(_Y_FIELD[(bool(q.fused_y), f32)], y.nbytes)
            small = a.SerializeToString()
            encoded.append((small, key, y, q.keep_y))
        parts: List[Any] = []
        keeps: List[Tuple[int, int, int]] = []  # (id, offset in the message, entries)
        inner = sum(len(sm) + len(k) + memoryview(y).nbytes for sm, k, y, _ in encoded)
        inner += sum(len(_len_field(1, len(sm) + len(k) + memoryview(y).nbytes))
                     for sm, k, y, _ in encoded)
        parts.append(_len_field(2, inner))
        offset = len(parts[0])
        for small, key, y, keep in encoded:
            n = memoryview(y).nbytes
            head = _len_field(1, len(small) + len(key) + n)
            parts += [head, small, key, y]
            offset += len(head) + len(small) + len(key)
            if keep:
                keeps.append((keep, offset, n // wire.itemsize))
            offset += n
        out = b"".join(parts)
        for keep, at, n in keeps:
            # What the server received, for its recipes (a read-only
            # view of the sent bytes; float32 widened where used).
            self._points[keep] = np.frombuffer(out, dtype=wire, count=n, offset=at)
        for i in request.forget:
            self._points.pop(i, None)
        return out
