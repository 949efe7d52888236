"""Which session or group a request names, as its RPC declares it.

Every RPC of f2obo.v1.F2obo carries the method option (f2obo.v1.policy)
(proto/f2obo/v1/rpc_policy.proto): the request fields naming the session or
group it is about, whose routing key (the id up to its first '.') is sent as
the x-f2obo-session header for a proxy that pins sessions to replicas.  The
same declaration drives the C++ client (client/session_routing.h).
"""
from typing import Any, Dict, List

from ._stubs import pb, policy_pb2

_SERVICE = pb.DESCRIPTOR.services_by_name["F2obo"]


def policy(method: str) -> Any:
    """The (f2obo.v1.policy) option of `method` (KeyError for an unknown one)."""
    return _SERVICE.methods_by_name[method].GetOptions().Extensions[policy_pb2.policy]


_ROUTES: Dict[str, List[List[str]]] = {
    m.name: [path.split(".") for path in policy(m.name).routing_fields]
    for m in _SERVICE.methods}


def routing_key(session_id: str) -> str:
    """The x-f2obo-session value: the id up to its first '.' (a group member
    routes with its group)."""
    return session_id.split(".", 1)[0]


def routed_id(method: str, request: Any) -> str:
    """The id `request` of `method` names: its first routing field that is
    set ("" for a call that names none)."""
    for path in _ROUTES[method]:
        message = request
        for name in path[:-1]:
            if not message.HasField(name):
                break
            message = getattr(message, name)
        else:
            value = getattr(message, path[-1])
            if value:
                return value
    return ""
