"""What a Session or Group handle needs of its Client: the stub, the call
metadata, unary calls with retries, and the retry budgets.

A structural type (typing.Protocol) that Client satisfies, so that
session.py and group.py depend on this small interface rather than on
client.py, which creates them: the modules form a line
(client -> group -> session -> _transport), not a circle.
"""
from __future__ import annotations

from typing import Any, List, Optional, Protocol, Tuple

from . import errors
from .views import GroupInfo, SessionInfo


class Transport(Protocol):
    stub: Any  # f2obo.v1 F2oboStub
    retries: int
    reconnect_timeout: float
    moved_retry_seconds: float

    def metadata(self, session_id: str = "") -> Tuple[Tuple[str, str], ...]:
        """Call metadata: the token and, for a session or group, its routing key."""

    def _call(self, method: str, request: Any, retry: bool = False) -> Any:
        """One unary call with metadata, timeout, safe retries, mapped errors."""

    def _wait_ready(self, timeout: float, error: Optional[errors.Error] = None) -> None:
        """Waits up to `timeout` s for the channel (Unavailable if it is not)."""

    def get_session(self, session_id: str) -> SessionInfo: ...

    def delete_session(self, session_id: str) -> None: ...

    def get_group(self, group_id: str) -> GroupInfo: ...

    def delete_group(self, group_id: str) -> List[str]: ...
