"""f2obo: Python client of the f2obo online bilevel optimization service.

    import numpy as np, f2obo

    client = f2obo.Client("127.0.0.1:50051")
    session = client.create_session(family="logistic_hpo", features=20, classes=3,
                                    algorithm="af2obo", box=(0.0, 0.1))
    result = session.step(upper=(X_val, y_val), inner=(X_train, y_train))
    result.x                  # the new decision x_{t+1}, a numpy array
    result.upper_loss_before  # the round's report, as attributes

Modules: client (Client, TLS), session (Session: step, stream, decision,
metrics, export), oracle (OracleStream: steps of a family "oracle" session whose
f and g this process computes), group (Group: side-by-side sessions), batch (numpy /
scipy.sparse -> wire batches), views (result objects), errors (one
exception class per gRPC status code), drift (DriftingStream: the CLI's
drifting stream over a numpy dataset), fields and spec (keyword arguments
-> proto fields by name).  The generated protobuf modules are
`f2obo.pb` (messages) and `f2obo.pb_grpc` (the stub).  `f2obo.torch`
(Tuner: tune a torch.nn.Module's hyperparameters) is imported on first
use, so `import f2obo` alone does not import torch.
"""
import importlib as _importlib
from typing import Any as _Any

from ._stubs import pb, pb_grpc
from .batch import batch, to_batch
from .client import TLS, Client
from .drift import DriftingStream
from .errors import (ERROR_CLASSES, Aborted, AlreadyExists, Cancelled, DataLoss,
                     DeadlineExceeded, Error, FailedPrecondition, Internal, InvalidArgument,
                     NotFound, OutOfRange, PermissionDenied, ResourceExhausted, Unauthenticated,
                     Unavailable, Unimplemented, Unknown)
from .group import Group, GroupStepResult
from .oracle import OracleQuery, OracleStream
from .session import MetricsWatch, Session
from .views import Decision, GroupInfo, SessionInfo, StepMetrics, StepResult, View

__version__ = "0.1.0"

__all__ = [
    "Client", "TLS", "Session", "Group", "MetricsWatch", "DriftingStream", "OracleStream",
    "OracleQuery",
    "StepResult", "GroupStepResult", "Decision", "SessionInfo", "GroupInfo", "StepMetrics",
    "View", "batch", "to_batch", "pb", "pb_grpc", "ERROR_CLASSES",
    "Error", "Cancelled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
    "AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted",
    "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated",
]


def __getattr__(name: str) -> _Any:
    # PEP 562: `f2obo.torch` after a plain `import f2obo`, torch loaded
    # only then (a user of the numpy client needs no torch).
    if name == "torch":
        return _importlib.import_module(".torch", __name__)
    raise AttributeError("module 'f2obo' has no attribute %r" % name)
