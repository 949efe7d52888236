"""Result objects: read-only views of the server's reply messages.

A view exposes every field of its message as an attribute, read through
the descriptor, so fields the proto gains reach users with no edit here:
  * repeated numbers -> numpy arrays (float64 / int64 / bool);
  * nested messages -> views (None when the message is absent);
  * proto3 `optional` scalars -> None when unset;
  * Python keywords get a trailing underscore (`report.lambda_`).
`view.proto` is the message itself and `view.to_dict()` a plain dict with
the proto's field names.  A message with a `problem_class` oneof (a
round's report, exact metrics, running sums, session info) keeps each
problem class's fields in that class's message; its view answers for the
fields of the one that is set too (`report.lambda_` is
`report.bilevel.lambda_` for a bilevel session, `report.multitask.lambda_`
for a multi-task one).  Some views also answer for the fields of a nested
message (`StepResult.upper_loss_before` is
`StepResult.report.upper_loss_before`).
"""
from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Tuple, Type

import numpy as np
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message

from . import fields
from ._stubs import pb

FD = _descriptor.FieldDescriptor
# The oneof holding a message's problem-class part (one message per class).
_CLASS_ONEOF = "problem_class"

# Message full name -> view class; other messages get the plain View.
_VIEW_CLASSES: Dict[str, Type["View"]] = {}


def view_of(message: _message.Message) -> "View":
    """The view for `message` (its registered class, else View)."""
    return _VIEW_CLASSES.get(message.DESCRIPTOR.full_name, View)(message)


def _value(message: _message.Message, fd: FD) -> Any:
    value = getattr(message, fd.name)
    if fd.label == FD.LABEL_REPEATED:
        if fd.message_type is not None:
            return [view_of(m) for m in value]
        if fd.type in (FD.TYPE_STRING, FD.TYPE_BYTES):
            return list(value)
        return fields.to_numpy(value, fd)
    if fd.message_type is not None:
        return view_of(value) if message.HasField(fd.name) else None
    if fd.has_presence and not message.HasField(fd.name):
        return None
    if fd.type == FD.TYPE_ENUM:
        v = fd.enum_type.values_by_number.get(value)
        return v.name if v is not None else value
    return value


class View:
    """Attribute access to the fields of a protobuf message (see module doc)."""

    __slots__ = ("_message", "_cache")
    #: Fields of these nested messages are reachable as attributes too.
    _flatten: Tuple[str, ...] = ()

    def __init__(self, message: _message.Message) -> None:
        object.__setattr__(self, "_message", message)
        object.__setattr__(self, "_cache", {})

    def __init_subclass__(cls, message: Optional[str] = None, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if message is not None:
            _VIEW_CLASSES[getattr(pb, message).DESCRIPTOR.full_name] = cls

    @property
    def proto(self) -> _message.Message:
        """The underlying protobuf message."""
        return self._message

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        cache = self._cache
        if name in cache:
            return cache[name]
        fd = fields.field_named(self._message.DESCRIPTOR, name)
        if fd is not None:
            value = cache[name] = _value(self._message, fd)
            return value
        for outer in self._nested():
            sub = getattr(self, outer)
            if sub is not None and name in sub._names():
                return getattr(sub, name)
        raise AttributeError("%s has no field %r (fields: %s)" % (
            type(self).__name__, name, ", ".join(self._names())))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("%s is read-only" % type(self).__name__)

    def _nested(self) -> Tuple[str, ...]:
        """The nested messages whose fields this view answers for: the
        class's part (the `problem_class` oneof's field that is set), then
        `_flatten`."""
        oneof = self._message.DESCRIPTOR.oneofs_by_name.get(_CLASS_ONEOF)
        part = self._message.WhichOneof(_CLASS_ONEOF) if oneof is not None else None
        return ((part,) if part else ()) + self._flatten

    def _names(self) -> List[str]:
        names = [fields.python_name(f.name) for f in self._message.DESCRIPTOR.fields]
        for outer in self._nested():
            sub = getattr(self, outer)
            if sub is not None:
                names += [n for n in sub._names() if n not in names]
        return names

    def __dir__(self) -> List[str]:
        return sorted(set(object.__dir__(self)) | set(self._names()))

    def __iter__(self) -> Iterator[Tuple[str, Any]]:
        """(name, value) for each field of the message itself."""
        for f in self._message.DESCRIPTOR.fields:
            yield fields.python_name(f.name), getattr(self, f.name)

    def to_dict(self) -> Dict[str, Any]:
        """Field name (as in the proto) -> value, nested views as dicts."""
        out: Dict[str, Any] = {}
        for f in self._message.DESCRIPTOR.fields:
            v = _value(self._message, f)
            if isinstance(v, View):
                v = v.to_dict()
            elif isinstance(v, list) and v and isinstance(v[0], View):
                v = [item.to_dict() for item in v]
            out[f.name] = v
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, View) and self._message == other._message

    def __hash__(self) -> int:
        return hash(self._message.SerializeToString(deterministic=True))

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (self._message,))

    def __repr__(self) -> str:
        parts = []
        for f in self._message.DESCRIPTOR.fields:
            v = _value(self._message, f)
            if v is None or (isinstance(v, list) and not v):
                continue
            if isinstance(v, np.ndarray):
                v = np.array2string(v, threshold=6, precision=6, separator=", ")
            else:
                v = repr(v)
            parts.append("%s=%s" % (fields.python_name(f.name), v))
        name = self._message.DESCRIPTOR.name if type(self) is View else type(self).__name__
        return "%s(%s)" % (name, ", ".join(parts))


class StepResult(View, message="StepReply"):
    """One applied step: `t`, the new decision `x` (x_{t+1}, numpy), the
    round's `report` (its fields are also attributes: `lambda_`,
    `upper_loss_before`, `accuracy_before`, `round_seconds`, ...),
    `latest_exact` (the newest exact metrics, or None) and `replayed`
    (True when the server answered a retried index from its cache)."""
    __slots__ = ()
    _flatten = ("report",)
    x: np.ndarray
    t: int


class Decision(View, message="Decision"):
    """The current decision: `x` (x_t) and `y` (y_t) as numpy arrays, the
    step `t` it is for, and `lambda_` (lambda_t)."""
    __slots__ = ()
    x: np.ndarray
    y: np.ndarray
    t: int


class SessionInfo(View, message="SessionInfo"):
    """A session's spec (defaults filled in), `next_t`, dimensions, totals
    and running metric sums (`metrics.blreg`, ...)."""
    __slots__ = ()
    next_t: int


class StepMetrics(View, message="StepMetrics"):
    """One step's metrics from WatchMetrics: `t`, the round's `report` and
    its `exact` metrics (None when not computed; `exact_skipped_reason`
    says why when they were due).  Fields of both are attributes too
    (`m.upper_loss_before`, `m.regret_term`, `m.running.blreg`)."""
    __slots__ = ()
    _flatten = ("report", "exact")
    t: int


class GroupInfo(View, message="GroupInfo"):
    """A group: `group_id` and its `members` (SessionInfo views)."""
    __slots__ = ()
