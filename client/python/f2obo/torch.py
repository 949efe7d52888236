"""f2obo.torch: tune the hyperparameters of a torch.nn.Module online.

The session is an oracle session (family "oracle", f2obo.oracle): x is
your hyperparameters flattened, y your model's parameters flattened; the
server runs the algorithm (F2OBO and its first-order kin) and asks for
values and gradients of f and g at the points it names; this module
answers with autograd on your model, called functionally at those points
(torch.nn.utils.stateless.functional_call / torch.func.functional_call),
so your module's own tensors are never touched mid-round.

    import torch, f2obo, f2obo.torch

    model = MLP()
    hp = {"wd": f2obo.torch.Hyperparameter(torch.full((3,), 1e-3), box=(0.0, 0.1)),
          "cw": f2obo.torch.Hyperparameter(torch.ones(10), box=(0.2, 5.0))}

    def train_loss(model, hp, batch):          # g: strongly convex in y needs a ridge
        X, labels = batch
        return weighted_ce(model(X), labels, hp["cw"]) + l2(model, hp["wd"])

    def val_loss(model, hp, batch):            # f
        X, labels = batch
        return torch.nn.functional.cross_entropy(model(X), labels)

    tuner = f2obo.torch.Tuner(client, model, hp, train_loss, val_loss)
    for val_batch, train_batch in stream:
        result = tuner.step(val_batch, train_batch)   # a StepResult
    tuner.hparams          # {name: tensor}, the decision x_{t+1}
    tuner.session          # f2obo.Session: decision(), metrics(), checkpoint(), ...

No step size is needed: the session is F2OBO (`algorithm="f2obo"` unless
`create` names another) with automatic step sizes, the inner loops' from
the differences of the gradients this module sends (a secant rule on the
server, core/bilevel/hypergradients/secant_steps.h) and the upper step's per
coordinate (coin betting); `alpha=`, `beta=`, `gamma=` set them.

Batches are a tensor or a tuple / list of tensors whose first dimension is
the rows; the server's mini-batches (sf2obo) index every tensor of the
batch by the same rows.  Both losses are means over the batch's rows
(f2obo.oracle's contract).  Gradients flow through `hp` in both losses:
hyperparameters f does not use get a zero gradient.

The module's parameters follow the session's y: after every step (or every
`sync_every` steps; 0: only on `sync()`) the tuner loads y_{t+1} into them,
so `model` is the trained network.  y comes with the step's reply (the
server names the point it last asked at), so keeping in step costs no
GetDecision round trip; `sync()` reads the session's decision (a resumed
session, a replayed step).  Buffers (batch-norm statistics) are not part
of y and are not tuned.

Dtype and device: the autograd work runs in the module's dtype (or
`dtype=`) on the module's device: the points the server names are made
there and the gradients leave it only to be sent, so a CUDA model stays on
its GPU (one host-device copy per point and per gradient) and a float32
model stays float32 (the session's state is float64 on the server).  The
gradients travel as float32 when the autograd work is float32 or narrower
(OracleStepOpen.float32: half the bytes up, and nothing the model computed
is lost), else as float64; `float32_wire=False` forces float64 (`True`:
float32 for a float64 model too).  Points come as float64 either way.

Constraint set of x: every Hyperparameter has a box (lo, hi), a scalar or
per-entry (the default: unbounded); the session's box is theirs side by
side.  A simplex (`simplex=total`) must be the only hyperparameter, since
the server projects x onto one set.

Staying in step with the session:
  * the session is stored with a fingerprint of the model (the names and
    shapes of its parameters and of the hyperparameters, f2obo._fingerprint);
    resuming it with another model is refused (ValueError naming the first
    difference), as is one whose sizes differ from the session's;
  * `Tuner.create_or_resume(..., session_id=...)` resumes the session if it
    exists, else creates it (a restarted script runs the same line);
  * a rollback (`tuner.session.rollback(to_t)`, or `tuner.rollback`), a
    fork assigned to `tuner.session`, or steps applied by another client
    are noticed before the next step: the module and the hyperparameters
    are reloaded from the session's decision and the step carries the
    session's index.  A step index the server refuses (the session was
    moved by a handle this tuner does not see) reloads them too and, when
    `t` was not given, is run again once at the session's index;
  * a step whose connection breaks (UNAVAILABLE: a server restart) is
    retried with the same index (OracleStream.step), applied exactly once;
  * a non-finite value or gradient of your loss is refused here, naming
    the function (f: val_loss, g: train_loss) and the hyperparameter or
    parameter entry, before anything is sent.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from . import _fingerprint, errors
from .oracle import OracleQuery, OracleStream
from .session import Session
from .views import StepResult

try:  # torch >= 2.0
    from torch.func import functional_call as _functional_call
except ImportError:  # torch 1.13 (Debian 12)
    from torch.nn.utils.stateless import functional_call as _functional_call

Batch = Union[torch.Tensor, Sequence[torch.Tensor]]
Loss = Callable[[torch.nn.Module, Dict[str, torch.Tensor], Any], torch.Tensor]

__all__ = ["Hyperparameter", "Tuner"]


@dataclasses.dataclass
class Hyperparameter:
    """A hyperparameter tensor `value` (its initial value) and its set:
    `box=(lo, hi)` (scalars or tensors of value's shape; None: unbounded)
    or `simplex=total` ({v >= 0, sum v = total})."""
    value: torch.Tensor
    box: Optional[Tuple[Any, Any]] = None
    simplex: Optional[float] = None

    def __post_init__(self) -> None:
        self.value = torch.as_tensor(self.value)
        if self.box is not None and self.simplex is not None:
            raise ValueError("Hyperparameter: give box or simplex, not both")


def _rows(batch: Batch, rows: Optional[np.ndarray]) -> Batch:
    if rows is None:
        return batch
    index = torch.from_numpy(rows)
    if isinstance(batch, torch.Tensor):
        return batch[index.to(batch.device)]
    return type(batch)(b[index.to(b.device)] for b in batch)


def _num_rows(batch: Batch) -> int:
    return len(batch if isinstance(batch, torch.Tensor) else batch[0])


class Tuner:
    """Tunes `hparams` of `model` online on an f2obo server (see module doc).

    `resume=True`: `session_id` names an existing oracle session, which is
    resumed (its x and y are loaded into the hyperparameters and the
    module) if the model's fingerprint matches it; else a new session is
    created with `create` keywords (algorithm, default f2obo; alpha, beta,
    gamma, seed, ...; create_session's), x0 = the hyperparameters' values,
    y0 = the module's parameters.  `dtype`: the precision of the autograd work
    (default the module's).  `float32_wire`: the gradients sent as float32
    (default: when `dtype` is float32 or narrower; module doc).
    """

    def __init__(self, client: Any, model: torch.nn.Module,
                 hparams: Mapping[str, Union[Hyperparameter, torch.Tensor]],
                 train_loss: Loss, val_loss: Loss, *, session_id: str = "",
                 resume: bool = False, sync_every: int = 1,
                 dtype: Optional[torch.dtype] = None, float32_wire: Optional[bool] = None,
                 **create: Any) -> None:
        self.client = client
        self.model = model
        self.train_loss = train_loss
        self.val_loss = val_loss
        self.sync_every = sync_every
        self._hp = {k: v if isinstance(v, Hyperparameter) else Hyperparameter(v)
                    for k, v in hparams.items()}
        self._params = [(n, p) for n, p in model.named_parameters()]
        if not self._params:
            raise ValueError("Tuner: the model has no parameters")
        self.dtype = dtype or self._params[0][1].dtype
        self.float32_wire = (torch.finfo(self.dtype).bits <= 32 if float32_wire is None
                             else bool(float32_wire))
        # Where the autograd work runs: the module's device (a CUDA model's
        # points are made there, its gradients leave it only for the wire).
        self.device = self._params[0][1].device
        self._x_layout = self._layout([(k, h.value.shape) for k, h in self._hp.items()])
        self._y_layout = self._layout([(n, p.shape) for n, p in self._params])
        self.x_dim = self._x_layout[-1][2] if self._x_layout else 0
        self.y_dim = self._y_layout[-1][2]
        self._fingerprint = _fingerprint.fingerprint(
            [(n, p.shape) for n, p in self._params],
            [(k, h.value.shape) for k, h in self._hp.items()])
        self._x = torch.from_numpy(self._flat_x())
        self._steps = 0
        self._stream: Optional[OracleStream] = None
        self._converted: Optional[Tuple[np.ndarray, torch.Tensor]] = None  # _point's
        if resume:
            self.session = Session(client, session_id)  # checks, then loads x_t and y_t
        else:
            # F2OBO, not the class default sf2obo: the automatic inner
            # steps through an oracle need one batch per round's loop.
            create.setdefault("algorithm", "f2obo")
            created = client.create_session(
                family="oracle", x_dim=self.x_dim, y_dim=self.y_dim, session_id=session_id,
                x0=self._flat_x(), y0=self._flat_y(),
                client_metadata=_fingerprint.metadata(self._fingerprint),
                **self._x_groups(), **self._constraint(), **create)
            self._use(created)
            self._at_t = created.next_t  # the module holds y_1 = y0 already

    @classmethod
    def create_or_resume(cls, client: Any, model: torch.nn.Module,
                         hparams: Mapping[str, Union[Hyperparameter, torch.Tensor]],
                         train_loss: Loss, val_loss: Loss, *, session_id: str,
                         sync_every: int = 1, dtype: Optional[torch.dtype] = None,
                         float32_wire: Optional[bool] = None, **create: Any) -> "Tuner":
        """Resumes session `session_id` if it exists (`create` is then not
        used), else creates it with `create`: the same line serves the
        first run of a script and its restarts."""
        if not session_id:
            raise ValueError("Tuner.create_or_resume: give the session_id to resume or create")
        kw = dict(session_id=session_id, sync_every=sync_every, dtype=dtype,
                  float32_wire=float32_wire)
        try:
            client.get_session(session_id)
        except errors.NotFound:
            try:
                return cls(client, model, hparams, train_loss, val_loss, **kw, **create)
            except errors.AlreadyExists:
                pass  # another process created it meanwhile: resume it
        return cls(client, model, hparams, train_loss, val_loss, resume=True, **kw)

    # ---- the session -----------------------------------------------------------
    @property
    def session(self) -> Session:
        """The session (f2obo.Session).  Assigning another one (a fork, an
        import of this one) checks it fits the model and loads its x_t and
        y_t; the next steps go to it."""
        return self._session

    @session.setter
    def session(self, session: Session) -> None:
        self._check_fits(session)
        self._use(session)
        self.sync()

    def _use(self, session: Session) -> None:
        if self._stream is not None:
            self._stream.close()
        self._session = session
        self._stream = OracleStream(self.client, session.id)
        self._stream.float32 = self.float32_wire

    def _x_groups(self) -> Dict[str, Any]:
        """The hyperparameters' names as the session's x_groups (the
        dashboard's and Prometheus' names for x), when the server's rules
        for them hold (at most 64, 1-64 printable ASCII characters each);
        else none, and x is shown unnamed."""
        groups = [{"name": k, "size": int(h.value.numel())} for k, h in self._hp.items()]
        ok = 0 < len(groups) <= 64 and all(
            0 < len(g["name"]) <= 64 and all(" " <= c <= "~" for c in g["name"])
            and g["size"] > 0 for g in groups)
        return {"x_groups": groups} if ok else {}

    def _check_fits(self, session: Session) -> None:
        """Refuses a session made for another model (ValueError)."""
        spec = session.info().spec
        what = "Tuner: session %r" % session.id
        if spec.family.name != "oracle":
            raise ValueError("%s is of family %r; a Tuner steps 'oracle' sessions"
                             % (what, spec.family.name))
        fp = _fingerprint.stored(spec.client_metadata)
        if fp is not None:
            diff = _fingerprint.difference(fp, self._fingerprint)
            if diff is not None:
                raise ValueError("%s was created for another model: %s; resume it with the "
                                 "model and hyperparameters it was created with" % (what, diff))
        for name, ours, theirs in (("y_dim (parameters)", self.y_dim, spec.family.y_dim),
                                   ("x_dim (hyperparameters)", self.x_dim, spec.family.x_dim)):
            if ours != theirs:
                raise ValueError("%s has %s = %d, this model %d; resume it with the model it "
                                 "was created with" % (what, name, theirs, ours))

    def rollback(self, to_t: int) -> None:
        """Session.rollback(to_t), then loads x and y of t = to_t + 1."""
        self._session.rollback(to_t)
        self.sync()

    # ---- layouts: name -> slice of the flat vector -------------------------
    @staticmethod
    def _layout(shapes: List[Tuple[str, torch.Size]]) -> List[Tuple[str, int, int, torch.Size]]:
        out, at = [], 0
        for name, shape in shapes:
            n = int(np.prod(shape)) if len(shape) else 1
            out.append((name, at, at + n, torch.Size(shape)))
            at += n
        return out

    @staticmethod
    def _split(flat: torch.Tensor, layout) -> Dict[str, torch.Tensor]:
        return {name: flat[a:b].view(shape) for name, a, b, shape in layout}

    def _flat_x(self) -> np.ndarray:
        if not self._hp:
            return np.zeros(0)
        return np.concatenate([h.value.detach().reshape(-1).to(torch.float64).cpu().numpy()
                               for h in self._hp.values()])

    def _flat_y(self) -> np.ndarray:
        return np.concatenate([p.detach().reshape(-1).to(torch.float64).cpu().numpy()
                               for _, p in self._params])

    def _constraint(self) -> Dict[str, Any]:
        simplex = [k for k, h in self._hp.items() if h.simplex is not None]
        if simplex:
            if len(self._hp) != 1:
                raise ValueError("Tuner: %r is a simplex; the server projects x onto one set, so "
                                 "it must be the only hyperparameter" % simplex[0])
            return {"simplex": {"total": float(self._hp[simplex[0]].simplex)}}
        if all(h.box is None for h in self._hp.values()):
            return {"unconstrained": True}
        lo, hi = [], []
        for h in self._hp.values():
            b = h.box if h.box is not None else (-np.inf, np.inf)
            for side, out in zip(b, (lo, hi)):
                v = torch.as_tensor(side, dtype=torch.float64).expand(h.value.shape)
                out.append(v.reshape(-1).numpy())
        return {"box": (np.concatenate(lo), np.concatenate(hi))}

    # ---- the state -----------------------------------------------------------
    @property
    def hparams(self) -> Dict[str, torch.Tensor]:
        """The current hyperparameters (the session's x), by name."""
        return {k: v.clone() for k, v in self._split(self._x, self._x_layout).items()}

    def sync(self) -> None:
        """Loads the session's decision (x_t, y_t) into the hyperparameters
        and the module's parameters."""
        d = self._session.decision()
        self._x = torch.from_numpy(np.array(d.x, dtype=np.float64))
        self._load_y(np.asarray(d.y, dtype=np.float64))
        self._at_t = int(d.t)
        self._session._next_t = self._at_t

    def _load_y(self, flat: np.ndarray) -> None:
        y = torch.from_numpy(flat).to(self.device)  # one transfer; copy_ casts the dtype
        with torch.no_grad():
            for (name, a, b, shape), (_, p) in zip(self._y_layout, self._params):
                p.copy_(y[a:b].view(shape))

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()

    def __enter__(self) -> "Tuner":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- one step --------------------------------------------------------------
    def step(self, val_batch: Batch, train_batch: Batch, *, t: Optional[int] = None
             ) -> StepResult:
        """Runs one step: f on `val_batch` (the upper batch), g on
        `train_batch` (the inner one).  Returns the server's StepResult.
        `t` (default: the session's next index) names the step."""
        for attempt in (0, 1):
            if t is None and self._session.next_t != self._at_t:
                self.sync()  # rolled back, forked or stepped by another handle
            step_t = self._at_t if t is None else t

            def evaluate(q: OracleQuery, step_t: int = step_t):
                return self._answer(q, val_batch if q.function == "f" else train_batch, step_t)
            try:
                result = self._stream.step(evaluate, upper_rows=_num_rows(val_batch),
                                           inner_rows=_num_rows(train_batch), t=step_t)
                break
            except errors.FailedPrecondition:
                self.sync()  # where the session really is
                if t is not None or attempt == 1 or self._at_t == step_t:
                    raise
            finally:
                self._converted = None  # the step's last point: not kept past it
        self._x = torch.from_numpy(np.array(result.x, dtype=np.float64))
        self._steps += 1
        if result.replayed or self._stream.y is None:
            self.sync()  # a replayed step: the server sent no y, and may be further on
        else:
            self._at_t = self._session._next_t = int(result.t) + 1
            if self.sync_every and self._steps % self.sync_every == 0:
                self._load_y(self._stream.y[0])  # y_{t+1}, sent with the reply
        return result

    def _point(self, v: np.ndarray) -> torch.Tensor:
        """The server's point `v` in the model's dtype and device: the last
        one converted is reused (a fused answer asks f and g at one y, the
        stream hands both the same array), as a new leaf of the same
        storage."""
        cached = self._converted
        if cached is None or cached[0] is not v:
            cached = (v, torch.tensor(v, dtype=self.dtype, device=self.device))
            if v.size > 4096:
                self._converted = cached
        return cached[1].detach()

    def _answer(self, q: OracleQuery, batch: Batch, t: int):
        x = self._point(q.x).requires_grad_(q.want_grad_x)
        y = self._point(q.y).requires_grad_(q.want_grad_y)
        loss_fn = self.val_loss if q.function == "f" else self.train_loss
        with torch.set_grad_enabled(q.want_grad_x or q.want_grad_y):
            loss = loss_fn(_ModelAt(self.model, self._split(y, self._y_layout)),
                           self._split(x, self._x_layout), _rows(batch, q.rows))
            wanted = [v for v, w in ((x, q.want_grad_x), (y, q.want_grad_y)) if w]
            grads = list(torch.autograd.grad(loss, wanted, allow_unused=True)) if wanted else []
        value = float(loss.detach())
        if q.want_value and not np.isfinite(value):
            raise self._not_finite(q, t, "its value is %r" % value)
        out = []
        for v, w, layout, noun in ((x, q.want_grad_x, self._x_layout, "hyperparameter"),
                                   (y, q.want_grad_y, self._y_layout, "parameter")):
            if not w:
                out.append(None)
                continue
            g = grads.pop(0)
            if g is None:
                out.append(np.zeros(v.numel()))
                continue
            g = g.detach()
            # A finite sum has finite terms (an inf or NaN entry makes it inf
            # or NaN): one pass without a temporary; the entry is looked for
            # only when the sum is not finite (it may also have overflowed).
            if not bool(torch.isfinite(g.sum())) and not bool(torch.isfinite(g).all()):
                i = int(torch.nonzero(~torch.isfinite(g))[0, 0])
                name, a, _, shape = next(e for e in layout if e[1] <= i < e[2])
                entry = [int(k) for k in np.unravel_index(i - a, tuple(shape))] if len(shape) else []
                raise self._not_finite(q, t, "its gradient with respect to %s %r%s is %r" % (
                    noun, name, entry if entry else "", float(g[i])))
            # The wire's precision: a float32 gradient is not widened here.
            out.append(g.to(torch.float32 if self.float32_wire else torch.float64).cpu().numpy())
        return value, out[0], out[1]

    def _not_finite(self, q: OracleQuery, t: int, what: str) -> errors.InvalidArgument:
        fn = "f (val_loss)" if q.function == "f" else "g (train_loss)"
        return errors.InvalidArgument("step %d: %s at the server's point of query %d: %s; "
                                      "the round is discarded, the session unchanged"
                                      % (t, fn, q.id, what))


class _ModelAt(torch.nn.Module):
    """The user's module called at other parameters (a functional call):
    `m(X)` runs model.forward with `params`; `named_parameters()` and
    `parameters()` give those tensors, so a loss may regularize them."""

    def __init__(self, model: torch.nn.Module, params: Dict[str, torch.Tensor]) -> None:
        super().__init__()
        object.__setattr__(self, "_model", model)
        object.__setattr__(self, "_at", params)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return _functional_call(self._model, self._at, args, kwargs)

    def named_parameters(self, *args: Any, **kwargs: Any):  # type: ignore[override]
        return iter(self._at.items())

    def parameters(self, *args: Any, **kwargs: Any):  # type: ignore[override]
        return iter(self._at.values())
