"""Batches: numpy and scipy.sparse data -> f2obo.v1.Batch, in one place.

A batch can be given as
  * `(features, labels)` for classification families (labels: an integer
    array, one class index per row), `(features, targets)` for regression
    (targets: a float array); features a 2-D numpy array (rows x features,
    any real dtype, sent as float64) or a scipy.sparse matrix (sent as CSR
    with sorted, de-duplicated columns; explicit zeros are kept);
  * a mapping of Batch field names: `{"features": X, "labels": y,
    "class_weights": w}`, `{"m": M, "c": c}` / `{"d": d}` for the quadratic
    family, and any field the proto adds later;
  * an f2obo.v1.Batch, sent as it is; None for an empty batch.
Any object with `indptr`, `indices`, `data` and `shape` (CSR arrays) is
taken as sparse, so scipy is needed only to convert other sparse formats.
"""
from __future__ import annotations

from typing import Any, Mapping, Tuple, Union

import numpy as np

from . import fields
from ._stubs import pb

#: What `Session.step` accepts for `upper` and `inner`.
BatchLike = Union["pb.Batch", Tuple[Any, Any], Mapping[str, Any], None]


def _is_sparse(value: Any) -> bool:
    if all(hasattr(value, a) for a in ("indptr", "indices", "data", "shape")):
        return True
    try:
        import scipy.sparse  # optional
    except ImportError:
        return False
    return scipy.sparse.issparse(value)


def _is_dense(value: Any) -> bool:
    return not _is_sparse(value) and not isinstance(value, (Mapping, str, bytes)) and (
        isinstance(value, (np.ndarray, list, tuple)) or hasattr(value, "__array__"))


def _fill_dense(msg: "pb.DenseMatrix", value: Any, where: str) -> None:
    arr = np.asarray(value)
    if arr.ndim != 2:
        raise ValueError("%s: expected a 2-D array (rows x columns), got shape %s"
                         % (where, arr.shape))
    if arr.size and arr.dtype.kind not in "fiub":
        raise TypeError("%s: expected real numbers, got dtype %s" % (where, arr.dtype))
    msg.rows, msg.cols = int(arr.shape[0]), int(arr.shape[1])
    fields.assign(msg, "values", arr.astype(np.float64, copy=False).ravel(order="C"), where + ".")


def _canonical_csr(value: Any) -> Any:
    """CSR with sorted, unique column indices per row (what the server wants)."""
    if not all(hasattr(value, a) for a in ("indptr", "indices", "data")) or \
            getattr(value, "format", "csr") != "csr":
        value = value.tocsr()
    if getattr(value, "has_canonical_format", True) is False:
        value = value.copy()
        value.sum_duplicates()  # also sorts the indices
    return value


def _fill_csr(msg: "pb.CsrMatrix", value: Any, where: str) -> None:
    m = _canonical_csr(value)
    msg.rows, msg.cols = int(m.shape[0]), int(m.shape[1])
    data = np.asarray(m.data)
    if data.size and data.dtype.kind not in "fiub":
        raise TypeError("%s: expected real numbers, got dtype %s" % (where, data.dtype))
    fields.assign(msg, "indptr", np.asarray(m.indptr, dtype=np.int64), where + ".")
    fields.assign(msg, "indices", np.asarray(m.indices, dtype=np.int64), where + ".")
    fields.assign(msg, "values", data.astype(np.float64, copy=False), where + ".")


fields.register_adapter(pb.DenseMatrix.DESCRIPTOR.full_name, _is_dense, _fill_dense)
fields.register_adapter(pb.CsrMatrix.DESCRIPTOR.full_name, _is_sparse, _fill_csr)


def _is_pair(value: Any) -> bool:
    return isinstance(value, tuple) and len(value) == 2


def _fill_pair(msg: "pb.Batch", value: Tuple[Any, Any], where: str) -> None:
    features, y = value
    fields.assign(msg, "features", features, where + ".")
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError("%s: labels/targets must be 1-D, got shape %s" % (where, y.shape))
    # Integer (or bool) arrays are class labels, real ones regression targets.
    fields.assign(msg, "targets" if y.dtype.kind == "f" else "labels", y, where + ".")


# A Batch field anywhere (StepRequest.upper, GroupStepRequest.inner, ...)
# takes the (features, y) pair; mappings and messages go the generic way.
fields.register_adapter(pb.Batch.DESCRIPTOR.full_name, _is_pair, _fill_pair)


def to_batch(value: BatchLike, where: str = "batch") -> "pb.Batch":
    """The wire Batch for `value` (see the module doc); errors name `where`."""
    if isinstance(value, pb.Batch):
        return value
    out = pb.Batch()
    if value is not None:
        fields.fill_message(out, value, where)
    return out


def batch(features: Any = None, labels: Any = None, targets: Any = None,
          **other_fields: Any) -> "pb.Batch":
    """Builds a Batch from keyword arguments (any Batch field by name)::

        f2obo.batch(features=X, labels=y, class_weights=w)
    """
    values = dict(other_fields)
    for name, value in (("features", features), ("labels", labels), ("targets", targets)):
        if value is not None:
            values[name] = value
    return to_batch(values)


#: One step's data in a stream: (upper, inner), or a mapping of the step
#: request's fields ({"upper": ..., "inner": ...} and any field added later).
StepLike = Union[Tuple[BatchLike, BatchLike], Mapping[str, Any]]


def step_request(request_type: Any, item: Any, where: str, **fixed: Any) -> Any:
    """A StepRequest / GroupStepRequest from a stream item or step() arguments;
    `fixed` (the session or group id and t) is set by the library; `where`
    prefixes error messages (e.g. "step t=5: ")."""
    request = request_type(**fixed)
    if isinstance(item, request_type):
        request.MergeFrom(item)
        for name, value in fixed.items():
            setattr(request, name, value)
        return request
    if isinstance(item, tuple) and len(item) == 2:
        item = {"upper": item[0], "inner": item[1]}
    if not isinstance(item, Mapping):
        raise TypeError("%sexpected (upper, inner) or a mapping of %s fields, got %s"
                        % (where, request_type.DESCRIPTOR.name, type(item).__name__))
    for name, value in item.items():
        if name in fixed:
            raise TypeError("%s%r is set by the library" % (where, name))
        fields.assign(request, name, value, where)
    return request
