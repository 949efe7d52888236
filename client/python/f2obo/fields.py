"""Setting protobuf fields from Python and numpy values, by field name.

Everything the library sends (session specs, options, batches) is filled
through `assign`, driven by the message descriptors of the generated stubs:
a field added to the proto is accepted by name at once, with no edit here.

Value rules, by field kind:
  * scalar: Python or numpy scalars (ints stay ints: an int field refuses
    1.5; None leaves the field unset);
  * repeated number: any array-like; large arrays are encoded in one piece
    (packed wire bytes merged into the message, rather than extending the
    container element by element; bench/python_client_bench.py measures both);
  * message: a message of that type, a mapping of its field names, a
    scalar (sets its field number 1: `family="ridge_hpo"`, `ball=2.0`), a
    tuple (its fields in field-number order: `box=(0.0, 0.1)`), or, for
    DenseMatrix and CsrMatrix, a numpy array or a scipy.sparse matrix;
  * repeated message: a sequence of such values.
Errors name the field's path (e.g. `options.gamma`) and are TypeError for
unknown names and wrong types, ValueError for values out of range.
"""
from __future__ import annotations

import difflib
import keyword
import numbers
from typing import Any, Callable, Dict, Iterable, Mapping, Optional

import numpy as np
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message

FD = _descriptor.FieldDescriptor

_INT_RANGES = {
    FD.TYPE_INT32: (-(2 ** 31), 2 ** 31 - 1), FD.TYPE_SINT32: (-(2 ** 31), 2 ** 31 - 1),
    FD.TYPE_SFIXED32: (-(2 ** 31), 2 ** 31 - 1), FD.TYPE_UINT32: (0, 2 ** 32 - 1),
    FD.TYPE_FIXED32: (0, 2 ** 32 - 1), FD.TYPE_INT64: (-(2 ** 63), 2 ** 63 - 1),
    FD.TYPE_SINT64: (-(2 ** 63), 2 ** 63 - 1), FD.TYPE_SFIXED64: (-(2 ** 63), 2 ** 63 - 1),
    FD.TYPE_UINT64: (0, 2 ** 64 - 1), FD.TYPE_FIXED64: (0, 2 ** 64 - 1),
}
_FLOATS = (FD.TYPE_DOUBLE, FD.TYPE_FLOAT)
# Fixed-width packed encodings (numpy dtype of the wire bytes).
_FIXED_DTYPES = {FD.TYPE_DOUBLE: "<f8", FD.TYPE_FLOAT: "<f4", FD.TYPE_FIXED64: "<u8",
                 FD.TYPE_SFIXED64: "<i8", FD.TYPE_FIXED32: "<u4", FD.TYPE_SFIXED32: "<i4"}
# Plain-varint packed encodings (two's complement for negative values).
_VARINT_TYPES = (FD.TYPE_INT32, FD.TYPE_INT64, FD.TYPE_UINT32, FD.TYPE_UINT64, FD.TYPE_BOOL,
                 FD.TYPE_ENUM)
# Below this many elements, extending the container is as fast.
_BULK_MIN = 64


def python_name(name: str) -> str:
    """The attribute name for a field: a trailing '_' on Python keywords (`lambda_`)."""
    return name + "_" if keyword.iskeyword(name) else name


def field_named(descriptor: _descriptor.Descriptor, name: str) -> Optional[FD]:
    """The field called `name` (or `name` without the '_' of a keyword), else None."""
    fd = descriptor.fields_by_name.get(name)
    if fd is None and name.endswith("_") and keyword.iskeyword(name[:-1]):
        fd = descriptor.fields_by_name.get(name[:-1])
    return fd


def unknown_name_error(prefix: str, name: str, container: str,
                       known: Iterable[str]) -> TypeError:
    """TypeError naming an unknown field or option, with the closest names."""
    known = sorted(set(known))
    close = difflib.get_close_matches(name, known, n=3)
    hint = "; did you mean %s?" % " or ".join(repr(c) for c in close) if close else ""
    return TypeError("%s%r is not a field of %s%s (known: %s)"
                     % (prefix, name, container, hint, ", ".join(known)))


def real_oneof(descriptor: _descriptor.Descriptor, name: str):
    """The oneof called `name` if it is a real one (not proto3 `optional`'s)."""
    oneof = descriptor.oneofs_by_name.get(name)
    if oneof is None:
        return None
    fields = list(oneof.fields)
    if len(fields) == 1 and oneof.name == "_" + fields[0].name:
        return None
    return oneof


# ------------------------------------------------------------- adapters
# Message types filled from a non-mapping value (numpy arrays, sparse
# matrices), by full name: accepts(value) -> bool, fill(message, value, path).
_Adapter = Dict[str, Callable[..., Any]]
ADAPTERS: Dict[str, _Adapter] = {}


def register_adapter(full_name: str, accepts: Callable[[Any], bool],
                     fill: Callable[[_message.Message, Any, str], None]) -> None:
    ADAPTERS[full_name] = {"accepts": accepts, "fill": fill}


# ------------------------------------------------------------- assignment


def assign(msg: _message.Message, name: str, value: Any, path: str = "") -> None:
    """Sets msg.<name> from `value` (see the module doc); `path` prefixes errors."""
    where = path + name
    fd = field_named(msg.DESCRIPTOR, name)
    if fd is None:
        oneof = real_oneof(msg.DESCRIPTOR, name)
        if oneof is not None:
            fd = _oneof_member(oneof, value, where)
        else:
            raise unknown_name_error(
                path, name, msg.DESCRIPTOR.name,
                [python_name(f.name) for f in msg.DESCRIPTOR.fields] +
                [o.name for o in msg.DESCRIPTOR.oneofs if real_oneof(msg.DESCRIPTOR, o.name)])
    if value is None:
        msg.ClearField(fd.name)
        return
    if fd.label == FD.LABEL_REPEATED:
        if fd.message_type is not None:
            container = getattr(msg, fd.name)
            del container[:]
            if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
                raise TypeError("%s: expected a sequence, got %s" % (where, type(value).__name__))
            for i, item in enumerate(value):
                fill_message(container.add(), item, "%s[%d]" % (where, i))
        else:
            msg.ClearField(fd.name)
            extend_repeated(msg, fd, value, where)
        return
    if fd.message_type is not None:
        sub = getattr(msg, fd.name)
        sub.Clear()
        fill_message(sub, value, where)
        sub.SetInParent()  # an empty mapping still selects the field (and its oneof case)
        return
    setattr(msg, fd.name, scalar(fd, value, where))


def _oneof_member(oneof, value, where: str) -> FD:
    """The member of `oneof` that takes `value` (by the adapters' accepts)."""
    for fd in oneof.fields:
        adapter = ADAPTERS.get(fd.message_type.full_name) if fd.message_type else None
        if adapter is not None and adapter["accepts"](value):
            return fd
        if isinstance(value, _message.Message) and fd.message_type is not None and \
                value.DESCRIPTOR.full_name == fd.message_type.full_name:
            return fd
    raise TypeError("%s: cannot tell which of %s a %s is" % (
        where, ", ".join(f.name for f in oneof.fields), type(value).__name__))


def fill_message(msg: _message.Message, value: Any, where: str) -> None:
    """Fills an (empty) message from a message, mapping, adapter value,
    tuple (fields in number order) or scalar (field number 1)."""
    if isinstance(value, _message.Message):
        if value.DESCRIPTOR.full_name != msg.DESCRIPTOR.full_name:
            raise TypeError("%s: expected a %s, got a %s" % (
                where, msg.DESCRIPTOR.name, value.DESCRIPTOR.name))
        msg.CopyFrom(value)
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            assign(msg, key, item, where + ".")
        return
    adapter = ADAPTERS.get(msg.DESCRIPTOR.full_name)
    if adapter is not None and adapter["accepts"](value):
        adapter["fill"](msg, value, where)
        return
    fields = sorted(msg.DESCRIPTOR.fields, key=lambda f: f.number)
    if isinstance(value, tuple):
        if len(value) > len(fields):
            raise TypeError("%s: %d values for the %d fields of %s (%s)" % (
                where, len(value), len(fields), msg.DESCRIPTOR.name,
                ", ".join(f.name for f in fields)))
        for fd, item in zip(fields, value):
            assign(msg, fd.name, item, where + ".")
        return
    if fields and fields[0].message_type is None and fields[0].label != FD.LABEL_REPEATED \
            and isinstance(value, (str, numbers.Number, np.generic)):
        assign(msg, fields[0].name, value, where + ".")
        return
    raise TypeError("%s: cannot make a %s from a %s (use a mapping of its fields: %s)" % (
        where, msg.DESCRIPTOR.name, type(value).__name__,
        ", ".join(f.name for f in fields)))


def scalar(fd: FD, value: Any, where: str) -> Any:
    """A Python value for a singular scalar field, checked against its type."""
    t = fd.type
    if t == FD.TYPE_BOOL:
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        raise TypeError("%s: expected a bool, got %r" % (where, value))
    if t in _FLOATS:
        if isinstance(value, (numbers.Real, np.floating, np.integer)) and \
                not isinstance(value, (bool, np.bool_)):
            return float(value)
        raise TypeError("%s: expected a number, got %r" % (where, value))
    if t in _INT_RANGES:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral,
                                                                         np.integer)):
            raise TypeError("%s: expected an integer, got %r" % (where, value))
        lo, hi = _INT_RANGES[t]
        if not lo <= int(value) <= hi:
            raise ValueError("%s: %d is outside [%d, %d]" % (where, int(value), lo, hi))
        return int(value)
    if t == FD.TYPE_STRING:
        if isinstance(value, str):
            return value
        raise TypeError("%s: expected a str, got %r" % (where, value))
    if t == FD.TYPE_BYTES:
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        raise TypeError("%s: expected bytes, got %r" % (where, value))
    if t == FD.TYPE_ENUM:
        if isinstance(value, str):
            v = fd.enum_type.values_by_name.get(value)
            if v is None:
                raise ValueError("%s: %r is not one of %s" % (
                    where, value, ", ".join(fd.enum_type.values_by_name)))
            return v.number
        return int(value)
    raise TypeError("%s: unsupported field type %d" % (where, t))


def numeric_array(fd: FD, value: Any, where: str) -> np.ndarray:
    """`value` as a 1-D numpy array fit for the repeated field `fd`."""
    if isinstance(value, (str, bytes)) or not _array_like(value):
        value = [value] if isinstance(value, (numbers.Number, np.generic)) else value
    arr = np.asarray(value)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError("%s: expected a 1-D array, got shape %s" % (where, arr.shape))
    if fd.type in _FLOATS:
        if arr.size and arr.dtype.kind not in "fiu":
            raise TypeError("%s: expected numbers, got dtype %s" % (where, arr.dtype))
        return arr.astype(np.float64, copy=False)
    if fd.type == FD.TYPE_BOOL:
        if arr.size and arr.dtype.kind != "b":
            raise TypeError("%s: expected bools, got dtype %s" % (where, arr.dtype))
        return arr.astype(np.uint64)
    if fd.type in _INT_RANGES or fd.type == FD.TYPE_ENUM:
        if arr.size and arr.dtype.kind == "f":
            if not np.all(np.isfinite(arr)) or np.any(arr != np.floor(arr)):
                bad = int(np.flatnonzero(~np.isfinite(arr) | (arr != np.floor(arr)))[0])
                raise ValueError("%s[%d] = %r is not an integer" % (where, bad, arr[bad]))
        elif arr.size and arr.dtype.kind not in "iub":
            raise TypeError("%s: expected integers, got dtype %s" % (where, arr.dtype))
        if arr.size == 0:
            return arr.astype(np.int64)
        lo, hi = _INT_RANGES.get(fd.type, (-(2 ** 31), 2 ** 31 - 1))
        if arr.min() < lo or arr.max() > hi:
            bad = int(np.flatnonzero((arr < lo) | (arr > hi))[0])
            raise ValueError("%s[%d] = %d is outside [%d, %d]" % (where, bad, arr[bad], lo, hi))
        return arr.astype(np.uint64 if fd.type in (FD.TYPE_UINT64, FD.TYPE_FIXED64)
                          else np.int64)
    return arr


def _array_like(value: Any) -> bool:
    return isinstance(value, (np.ndarray, list, tuple, range)) or hasattr(value, "__array__") \
        or (isinstance(value, Iterable) and not isinstance(value, Mapping))


def extend_repeated(msg: _message.Message, fd: FD, value: Any, where: str) -> None:
    """Appends the array `value` to the repeated scalar field `fd` of `msg`."""
    if fd.type in (FD.TYPE_STRING, FD.TYPE_BYTES):
        if isinstance(value, (str, bytes)):
            value = [value]
        getattr(msg, fd.name).extend(scalar(fd, v, "%s[%d]" % (where, i))
                                     for i, v in enumerate(value))
        return
    arr = numeric_array(fd, value, where)
    if arr.size < _BULK_MIN or not (fd.type in _FIXED_DTYPES or fd.type in _VARINT_TYPES):
        getattr(msg, fd.name).extend(arr.tolist())
        return
    if fd.type in _FIXED_DTYPES:
        payload = np.ascontiguousarray(arr, dtype=_FIXED_DTYPES[fd.type]).tobytes()
    else:
        payload = varints(arr.astype(np.int64).view(np.uint64))
    # A packed field: key (number, wire type 2), length, payload.  Parsers
    # accept packed bytes for every packable repeated field, and merging
    # appends to a repeated field.
    msg.MergeFromString(varints(np.array([fd.number << 3 | 2, len(payload)],
                                         dtype=np.uint64)) + payload)


def varints(u: np.ndarray) -> bytes:
    """Base-128 varint encoding of the uint64 array `u`, vectorized."""
    u = np.asarray(u, dtype=np.uint64)
    groups = np.ones(u.shape, dtype=np.int64)  # 7-bit groups per value
    rest = u >> np.uint64(7)
    while rest.any():
        groups += rest != 0
        rest >>= np.uint64(7)
    out = np.empty(int(groups.sum()), dtype=np.uint8)
    starts = np.cumsum(groups) - groups
    for k in range(int(groups.max()) if u.size else 0):
        sel = groups > k
        byte = (u[sel] >> np.uint64(7 * k)) & np.uint64(0x7F)
        more = (groups[sel] > k + 1).astype(np.uint64) << np.uint64(7)
        out[starts[sel] + k] = (byte | more).astype(np.uint8)
    return out.tobytes()


def to_numpy(container: Any, fd: FD) -> np.ndarray:
    """A repeated numeric field as a numpy array (float64, int64 or bool)."""
    if fd.type in _FLOATS:
        dtype = np.float64
    elif fd.type == FD.TYPE_BOOL:
        dtype = np.bool_
    elif fd.type in (FD.TYPE_UINT64, FD.TYPE_FIXED64):
        dtype = np.uint64
    else:
        dtype = np.int64
    return np.fromiter(container, dtype=dtype, count=len(container))
