"""The model fingerprint f2obo.torch keeps with a session.

A session's y is a model's parameters flattened in named_parameters'
order, and its x the hyperparameters flattened in the dict's order; a
different model of the same size would read another model's weights
without a word.  So the Tuner stores the names and shapes of both (and
their SHA-256) in the session's spec (SessionSpec.client_metadata, which
the server keeps, exports and forks with the session and never reads),
and a Tuner resuming the session refuses a model whose fingerprint
differs, naming the first parameter that does.

The stored text is JSON: {"f2obo.torch": {"digest": ..., "parameters":
[[name, shape], ...], "hyperparameters": [[name, shape], ...]}}; the lists
are left out when they would not fit the server's bound on the field
(the digest alone still refuses a mismatch, without naming it).
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

KEY = "f2obo.torch"
# The listing is dropped past this size: the server bounds client_metadata
# (64 KiB), and a model of ~1000 parameter tensors stays below.
_MAX_LISTING_BYTES = 48 << 10

Shapes = Sequence[Tuple[str, Sequence[int]]]


def _listing(params: Shapes, hparams: Shapes) -> Dict[str, List[Any]]:
    return {"parameters": [[n, [int(d) for d in s]] for n, s in params],
            "hyperparameters": [[n, [int(d) for d in s]] for n, s in hparams]}


def fingerprint(params: Shapes, hparams: Shapes) -> Dict[str, Any]:
    """The fingerprint of a model's (name, shape) list and the hyperparameters'."""
    listing = _listing(params, hparams)
    text = json.dumps(listing, separators=(",", ":"))
    out: Dict[str, Any] = {"digest": hashlib.sha256(text.encode()).hexdigest()}
    if len(text) <= _MAX_LISTING_BYTES:
        out.update(listing)
    return out


def metadata(fp: Dict[str, Any]) -> str:
    """The client_metadata text holding `fp`."""
    return json.dumps({KEY: fp}, separators=(",", ":"))


def stored(client_metadata: str) -> Optional[Dict[str, Any]]:
    """The fingerprint a session's client_metadata holds (None: none, e.g.
    a session created without f2obo.torch, or by a client that stores
    something else there)."""
    if not client_metadata:
        return None
    try:
        value = json.loads(client_metadata)
    except ValueError:
        return None
    fp = value.get(KEY) if isinstance(value, dict) else None
    return fp if isinstance(fp, dict) and "digest" in fp else None


def _shape(s: Sequence[int]) -> str:
    return "(%s)" % ", ".join(str(d) for d in s) if len(s) != 1 else "(%d,)" % s[0]


def difference(session_fp: Dict[str, Any], ours: Dict[str, Any]) -> Optional[str]:
    """None if the fingerprints agree, else what differs first (in words)."""
    if session_fp.get("digest") == ours["digest"]:
        return None
    for kind, noun in (("parameters", "parameter"), ("hyperparameters", "hyperparameter")):
        a, b = session_fp.get(kind), ours.get(kind)
        if a is None or b is None:
            continue
        for i, (sa, sb) in enumerate(zip(a, b)):
            if sa != sb:
                return ("%s %d is %r of shape %s in this model, %r of shape %s in the session"
                        % (noun, i, sb[0], _shape(sb[1]), sa[0], _shape(sa[1])))
        if len(a) != len(b):
            return ("this model has %d %ss, the session's %d"
                    % (len(b), noun, len(a)))
    return ("the names and shapes of the parameters or hyperparameters differ (SHA-256 %s "
            "here, %s in the session)" % (ours["digest"][:12], str(session_fp["digest"])[:12]))
