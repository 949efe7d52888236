"""Exceptions: one class per gRPC status code, all subclasses of `Error`.

The server's errors are precise (INVALID_ARGUMENT names the field and the
rule, FAILED_PRECONDITION the expected step index, RESOURCE_EXHAUSTED the
limit), so each exception keeps the status code and the server's message
verbatim::

    try:
        session.step(upper=..., inner=...)
    except f2obo.InvalidArgument as e:
        print(e.code, e.message)   # StatusCode.INVALID_ARGUMENT inner.labels[3] = 12 ...

`InvalidArgument` is also a `ValueError` and `NotFound` a `LookupError`, so
generic handlers catch them too.
"""
from __future__ import annotations

from typing import Dict, Optional, Type

import grpc


class Error(Exception):
    """An f2obo call failed.  `code` is the grpc.StatusCode, `message` the
    server's (or the channel's) text, `str(e)` the message alone."""

    #: The status code this class stands for (None only on `Error` itself).
    status_code: Optional[grpc.StatusCode] = None

    def __init__(self, message: str, code: Optional[grpc.StatusCode] = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code if code is not None else self.status_code

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return "%s(%r, code=%s)" % (type(self).__name__, self.message, self.code)


class Cancelled(Error):
    status_code = grpc.StatusCode.CANCELLED


class Unknown(Error):
    status_code = grpc.StatusCode.UNKNOWN


class InvalidArgument(Error, ValueError):
    status_code = grpc.StatusCode.INVALID_ARGUMENT


class DeadlineExceeded(Error):
    status_code = grpc.StatusCode.DEADLINE_EXCEEDED


class NotFound(Error, LookupError):
    status_code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(Error):
    status_code = grpc.StatusCode.ALREADY_EXISTS


class PermissionDenied(Error):
    status_code = grpc.StatusCode.PERMISSION_DENIED


class ResourceExhausted(Error):
    status_code = grpc.StatusCode.RESOURCE_EXHAUSTED


class FailedPrecondition(Error):
    status_code = grpc.StatusCode.FAILED_PRECONDITION


class Aborted(Error):
    status_code = grpc.StatusCode.ABORTED


class OutOfRange(Error):
    status_code = grpc.StatusCode.OUT_OF_RANGE


class Unimplemented(Error):
    status_code = grpc.StatusCode.UNIMPLEMENTED


class Internal(Error):
    status_code = grpc.StatusCode.INTERNAL


class Unavailable(Error):
    status_code = grpc.StatusCode.UNAVAILABLE


class DataLoss(Error):
    status_code = grpc.StatusCode.DATA_LOSS


class Unauthenticated(Error):
    status_code = grpc.StatusCode.UNAUTHENTICATED


#: grpc.StatusCode -> exception class, for every code but OK.
ERROR_CLASSES: Dict[grpc.StatusCode, Type[Error]] = {
    cls.status_code: cls for cls in Error.__subclasses__()  # type: ignore[misc]
}
assert set(ERROR_CLASSES) == set(grpc.StatusCode) - {grpc.StatusCode.OK}, "a code has no class"


def from_code(code: grpc.StatusCode, message: str) -> Error:
    """The exception for a status code (Unknown's class for codes grpc adds later)."""
    return ERROR_CLASSES.get(code, Unknown)(message, code)


def from_number(number: int, message: str) -> Error:
    """The exception for a numeric status code (as in MemberStepResult.code)."""
    for code in grpc.StatusCode:
        if code.value[0] == number:
            return from_code(code, message)
    return Unknown(message, grpc.StatusCode.UNKNOWN)


def is_proxy_reset(code: grpc.StatusCode, details: str) -> bool:
    """True for a stream reset by a proxy whose upstream died: nginx resets
    the client's stream with RST_STREAM INTERNAL_ERROR when the replica
    behind it is killed, which gRPC reports as INTERNAL "Received RST_STREAM
    with error code 2".  A server ends a call with a status, never a reset,
    so this is the transport breaking (client/client.h's IsProxyReset)."""
    return (code == grpc.StatusCode.INTERNAL
            and details.startswith("Received RST_STREAM with error code"))


def from_rpc_error(e: grpc.RpcError) -> Error:
    """Maps a grpc.RpcError (a grpc.Call) to our class, keeping its details.
    A proxy's reset (is_proxy_reset) is Unavailable: retried and resumed
    like a dropped connection, steps being idempotent by index."""
    code = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
    details = (e.details() if hasattr(e, "details") else str(e)) or ""
    if is_proxy_reset(code, details):
        return Unavailable("the proxy reset the call (its upstream replica went away): "
                           + details, grpc.StatusCode.UNAVAILABLE)
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and "message larger than max" in details:
        # gRPC's own size check says nothing of what to do (the server
        # refuses a reply beyond its --max_message_bytes itself, naming it).
        details += (": a message beyond gRPC's limit, this client's max_message_bytes "
                    "(Client(max_message_bytes=...)) or the server's --max_message_bytes: "
                    "raise the smaller above the first size (Session.export_chunks and "
                    "Client.import_chunks move a session of any size)")
    return from_code(code, details)


def is_moved(error: BaseException) -> bool:
    """True for the "moved" status: a replica refusing a session whose
    routing key it has fenced (being rebalanced to another replica, the
    proto's SetFence).  The same call succeeds once the proxy routes the
    key to its new owner, so steps retry it with the same index."""
    return isinstance(error, Unavailable) and "' is moving to replica '" in error.message
