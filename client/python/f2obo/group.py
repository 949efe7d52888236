"""A group handle: sessions stepped side by side on the same data."""
from __future__ import annotations

from typing import Any, Dict, Iterable, Iterator, List, Optional

from . import _stream, errors
from ._stubs import pb
from .batch import BatchLike, StepLike, step_request
from .session import Session, skip_applied
from ._transport import Transport
from .views import GroupInfo, StepResult, View



class GroupStepResult(View, message="GroupStepReply"):
    """One group step: `t`, and per member (by name, e.g. "af2obo" for the
    session "<group>.af2obo") its StepResult or its error.

    `result["af2obo"]` is that member's StepResult (raising its error if it
    failed); `results` / `errors` map names to the successes / failures;
    `ok` is True when every member applied the step.
    """
    __slots__ = ()

    def _name(self, session_id: str) -> str:
        prefix = self.proto.group_id + "."
        return session_id[len(prefix):] if session_id.startswith(prefix) else session_id

    @property
    def results(self) -> Dict[str, StepResult]:
        return {self._name(m.session_id): StepResult(m.reply)
                for m in self.proto.members if m.code == 0}

    @property
    def errors(self) -> Dict[str, errors.Error]:
        return {self._name(m.session_id): errors.from_number(
                    m.code, "member %s at t = %d: %s" % (m.session_id, self.proto.t, m.message))
                for m in self.proto.members if m.code != 0}

    @property
    def ok(self) -> bool:
        return all(m.code == 0 for m in self.proto.members)

    def names(self) -> List[str]:
        return [self._name(m.session_id) for m in self.proto.members]

    def __getitem__(self, name: str) -> StepResult:
        for m in self.proto.members:
            if self._name(m.session_id) == name:
                if m.code != 0:
                    raise self.errors[name]
                return StepResult(m.reply)
        raise KeyError("no member %r (members: %s)" % (name, ", ".join(self.names())))

    def raise_for_errors(self) -> "GroupStepResult":
        """Raises the first failed member's error (its status code's class,
        naming the member); returns self when all applied."""
        for error in self.errors.values():
            raise error
        return self


class Group:
    """A group of member sessions on the same family and data, each with its
    own algorithm (from Client.create_group or Client.group).  Every step
    uploads the data once and applies it to every member."""

    def __init__(self, client: Transport, group_id: str,
                 info: Optional[GroupInfo] = None) -> None:
        self.client = client
        self.id = group_id
        self._next_t: Optional[int] = None
        if info is not None:
            self._next_t = min(m.next_t for m in info.proto.members)

    def __repr__(self) -> str:
        return "Group(%r)" % self.id

    def info(self) -> GroupInfo:
        info = self.client.get_group(self.id)
        self._next_t = min(m.next_t for m in info.proto.members)
        return info

    @property
    def next_t(self) -> int:
        """The smallest next_t of the members (asks the server if unknown)."""
        if self._next_t is None:
            self.info()
        assert self._next_t is not None
        return self._next_t

    @property
    def sessions(self) -> Dict[str, Session]:
        """Member name -> Session handle (for decision(), metrics(), export())."""
        prefix = self.id + "."
        return {m.session_id[len(prefix):]: Session(self.client, m.session_id, m.next_t)
                for m in self.info().proto.members}

    def step(self, upper: BatchLike = None, inner: BatchLike = None, *,
             t: Optional[int] = None, check: bool = True,
             **request_fields: Any) -> GroupStepResult:
        """Applies one step to every member (batches as for Session.step),
        all members or none: a member's round that fails raises its error
        (e.g. InvalidArgument naming the member) and no member changed.

        A member already past t answers from its reply cache, or refuses t
        if it ran ahead alone: with `check` (the default) that refusal
        raises; with check=False the result carries it in `errors`.
        """
        t = self.next_t if t is None else t
        request = step_request(pb.GroupStepRequest,
                               dict(request_fields, upper=upper, inner=inner), "",
                               group_id=self.id, t=t)
        try:
            reply = self.client._call("StepGroup", request, retry=True)
        except errors.FailedPrecondition:
            self._next_t = None
            raise
        result = GroupStepResult(reply)
        self._next_t = reply.t + 1
        return result.raise_for_errors() if check else result

    def stream(self, steps: Iterable[StepLike], *, first_t: Optional[int] = None,
               in_flight: int = 1, check: bool = True,
               reconnects: int = 10) -> Iterator[GroupStepResult]:
        """Streams steps over StepsGroup, exactly once per member, resuming
        after a dropped connection or a server restart (as Session.stream);
        a member's failure raises its error when `check`."""
        _stream.check_in_flight(in_flight)
        self.info()
        next_t = self.next_t
        first = next_t if first_t is None else first_t
        requests = (step_request(pb.GroupStepRequest, item, "step t=%d: " % t,
                                 group_id=self.id, t=t)
                    for t, item in skip_applied(steps, first, next_t))
        replies = _stream.exactly_once(
            lambda outbox: self.client.stub.StepsGroup(outbox,
                                                       metadata=self.client.metadata(self.id)),
            requests, lambda: self.client.get_group(self.id), in_flight, reconnects,
            self.client.moved_retry_seconds)
        return self._results(replies, check)

    def _results(self, replies: Iterator["pb.GroupStepReply"],
                 check: bool) -> Iterator[GroupStepResult]:
        for reply in replies:
            result = GroupStepResult(reply)
            self._next_t = reply.t + 1
            yield result.raise_for_errors() if check else result

    def delete(self) -> List[str]:
        """Deletes the group and its members; returns the deleted session ids."""
        return self.client.delete_group(self.id)
