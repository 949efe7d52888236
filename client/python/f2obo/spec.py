"""Session specs from keyword arguments, routed by field name.

`create_session(family="logistic_hpo", features=784, classes=10,
algorithm="af2obo", box=(0, 0.1), alpha_auto=True, exact_every=5)`
sets each keyword on the field of that name, wherever it lives in the
SessionSpec: on the spec itself (algorithm, x0, seed, ...) or inside one of
its message fields, the *sections* (family -> FamilySpec, options ->
AlgorithmOptions, constraint -> ConstraintSpec, metrics -> MetricsPolicy,
and any section the proto adds).  A section can also be given whole
(`options={"gamma": 0.01}`, `family=pb.FamilySpec(...)`), which is also how
to set a name that two sections share (the flat form refuses it as
ambiguous).  An unknown name raises TypeError listing the closest known
ones.  The index is built from the descriptors, so new proto fields are
accepted without an edit here.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Tuple

from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message

from . import fields

FD = _descriptor.FieldDescriptor


class FlatFields:
    """Keyword -> (section, field) index of a message type and its sections."""

    def __init__(self, descriptor: _descriptor.Descriptor) -> None:
        self.descriptor = descriptor
        sections = [f.name for f in descriptor.fields
                    if f.message_type is not None and f.label != FD.LABEL_REPEATED]
        self.container = "%s or of its %s" % (descriptor.name, ", ".join(sections))
        # name -> list of (section or "", field name)
        self.index: Dict[str, List[Tuple[str, str]]] = {}
        for f in descriptor.fields:
            self.index.setdefault(fields.python_name(f.name), []).append(("", f.name))
            if f.message_type is not None and f.label != FD.LABEL_REPEATED:
                for sub in f.message_type.fields:
                    self.index.setdefault(fields.python_name(sub.name), []).append(
                        (f.name, sub.name))
                for oneof in f.message_type.oneofs:
                    if fields.real_oneof(f.message_type, oneof.name) is not None:
                        self.index.setdefault(oneof.name, []).append((f.name, oneof.name))

    def fill(self, msg: _message.Message, values: Mapping[str, Any], what: str) -> None:
        """Sets every keyword of `values` on `msg` (a message of this type).

        Whole sections are applied first, so a flat keyword refines them."""
        flat = []
        for name, value in values.items():
            places = self.index.get(name)
            if places is None:
                raise fields.unknown_name_error(what + ": ", name, self.container, self.index)
            top = [p for p in places if p[0] == ""]
            if top:
                fields.assign(msg, top[0][1], value)
            else:
                flat.append((name, places, value))
        for name, places, value in flat:
            if len(places) > 1:
                raise TypeError("%s: %r is a field of %s; pass it inside one of them, e.g. "
                                "%s={%r: ...}" % (what, name,
                                                  " and ".join(s for s, _ in places),
                                                  places[0][0], name))
            section, field = places[0]
            fields.assign(getattr(msg, section), field, value, section + ".")