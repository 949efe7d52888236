"""A numpy (or scipy.sparse) dataset replayed as a drifting stream.

The same stream as `f2obo-cli stream` (client/data/drift_stream.cc), draw
for draw: step t draws `rows_per_step` rows with a generator seeded from
(seed, t) alone (xoshiro256** through splitmix64, as core/rng.cc), keeping
a row of class i with probability rho^i in the current imbalance phase
(the paper's Sec. 6.1 schedule), splits them into the upper (validation)
and inner (training) batch, and replaces inner labels by a random class
with the label-noise probability in force (Sec. 6.2).  So for the same data
and options the CLI and this class send identical batches, and a resumed
stream regenerates exactly the batches an uninterrupted one would have::

    stream = f2obo.DriftingStream(X, y, rows_per_step=256, imbalance=(0.6, 0.9),
                                  phase_steps=100, seed=1)
    for result in session.stream(stream.steps(session.next_t, 400)):
        ...
"""
from __future__ import annotations

import math
from typing import Any, Iterator, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

_M64 = (1 << 64) - 1
#: Draws per requested row before a step gives up (drift_stream.h's kMaxDrawsPerRow).
MAX_DRAWS_PER_ROW = 1000
_GOLDEN = 0x9E3779B97F4A7C15


class Rng:
    """xoshiro256** seeded through splitmix64: core/rng.cc, bit for bit."""

    __slots__ = ("s",)

    def __init__(self, seed: int) -> None:
        x = seed & _M64
        s = []
        for _ in range(4):
            x = (x + _GOLDEN) & _M64
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
            s.append(z ^ (z >> 31))
        self.s = s

    def next(self) -> int:
        s0, s1, s2, s3 = self.s
        x = (s1 * 5) & _M64
        result = ((((x << 7) | (x >> 57)) & _M64) * 9) & _M64
        t = (s1 << 17) & _M64
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = ((s3 << 45) | (s3 >> 19)) & _M64
        self.s = [s0, s1, s2, s3]
        return result

    def uniform_below(self, n: int) -> int:
        """Uniform in [0, n) without modulo bias (Lemire 2019), as Rng::UniformBelow."""
        m = self.next() * n
        low = m & _M64
        if low < n:
            threshold = ((1 << 64) - n) % n
            while low < threshold:
                m = self.next() * n
                low = m & _M64
        return m >> 64

    def uniform01(self) -> float:
        """53 random bits in [0, 1), as the CLI's Uniform01."""
        return (self.next() >> 11) * 2.0 ** -53


def _lround(x: float) -> int:
    """std::lround for x >= 0: halves away from zero (Python's round() is
    half-to-even)."""
    whole = math.floor(x)
    return int(whole) + (1 if x - whole >= 0.5 else 0)


class DriftingStream:
    """Replays (features, y) as a drifting stream of (upper, inner) batches.

    Args:
      features: rows x d numpy array, or a scipy.sparse matrix (rows kept
        sparse).
      y: one value per row: integer class labels (classification; drift
        and noise apply) or float targets (regression; rows drawn uniformly).
      rows_per_step: rows drawn per step (>= 2), split into the batches.
      upper_fraction: share of those rows in the upper batch, in (0, 1).
      imbalance: one rho per phase (each in (0, 1]); class i is kept with
        probability rho^i; empty = balanced.
      phase_steps: steps per imbalance phase.
      label_noise: {first step: probability}: from that step on, each inner
        label is replaced with that probability by a uniform random class.
      noise_in_upper: corrupt the upper labels too.
      seed: the stream's seed (the CLI's --seed).
    """

    def __init__(self, features: Any, y: Any, *, rows_per_step: int = 256,
                 upper_fraction: float = 0.5, imbalance: Sequence[float] = (),
                 phase_steps: int = 100,
                 label_noise: Union[Mapping[int, float], Sequence[Tuple[int, float]], None] = None,
                 noise_in_upper: bool = False, seed: int = 1) -> None:
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError("y: expected one value per row, got shape %s" % (y.shape,))
        self._sparse = not isinstance(features, np.ndarray) and hasattr(features, "tocsr")
        self.features = features.tocsr() if self._sparse else np.asarray(features, np.float64)
        if self.features.ndim != 2 or self.features.shape[0] != y.shape[0]:
            raise ValueError("features: expected %d rows x d, got shape %s"
                             % (y.shape[0], self.features.shape))
        if y.shape[0] == 0:
            raise ValueError("the dataset has no rows")
        if rows_per_step < 2:
            raise ValueError("rows_per_step: must be >= 2")
        if not 0 < upper_fraction < 1:
            raise ValueError("upper_fraction: must lie in (0, 1)")
        if phase_steps < 1:
            raise ValueError("phase_steps: must be >= 1")
        if any(not 0 < rho <= 1 for rho in imbalance):
            raise ValueError("imbalance: every rho must lie in (0, 1]")
        noise = sorted(dict(label_noise or {}).items())
        if any(step < 1 or not 0 <= p <= 1 for step, p in noise):
            raise ValueError("label_noise: steps >= 1, probabilities in [0, 1]")
        self.labelled = y.dtype.kind in "iub"
        if self.labelled:
            if y.min() < 0:
                raise ValueError("y: class labels must be >= 0")
            self.y = y.astype(np.int64)
            self.classes = int(self.y.max()) + 1
        else:
            self.y = y.astype(np.float64)
            self.classes = 0
        self._labels = self.y.tolist()
        self.rows_per_step = rows_per_step
        self.upper_fraction = float(upper_fraction)
        self.imbalance = [float(r) for r in imbalance]
        self.phase_steps = phase_steps
        self.label_noise = [(int(s), float(p)) for s, p in noise]
        self.noise_in_upper = noise_in_upper
        self.seed = seed

    def keep_probability(self, t: int, label: int) -> float:
        """Probability that a row of class `label` is kept at step t."""
        if not self.imbalance:
            return 1.0
        phase = min((t - 1) // self.phase_steps, len(self.imbalance) - 1)
        return math.pow(self.imbalance[phase], label)

    def noise_probability(self, t: int) -> float:
        p = 0.0
        for step, prob in self.label_noise:
            if t >= step:
                p = prob
        return p

    def __getitem__(self, t: int) -> Tuple[Tuple[Any, np.ndarray], Tuple[Any, np.ndarray]]:
        """Step t's (upper, inner) batches, each (features, y); t >= 1."""
        if t < 1:
            raise IndexError("steps start at t = 1")
        rng = Rng((self.seed * _GOLDEN + t) & _M64)
        n = len(self._labels)
        rows = []
        keep = [self.keep_probability(t, label) for label in range(self.classes)]
        draws = 0
        while len(rows) < self.rows_per_step:
            draws += 1
            if draws > MAX_DRAWS_PER_ROW * self.rows_per_step:
                self._too_few_kept(t, len(rows), draws - 1, keep)
            i = rng.uniform_below(n)
            if not self.labelled or rng.uniform01() < keep[self._labels[i]]:
                rows.append(i)
        n_up = min(max(_lround(self.upper_fraction * len(rows)), 1), len(rows) - 1)
        up, inner = rows[:n_up], rows[n_up:]
        up_y = self._labels_of(up, t, self.noise_in_upper, rng)
        in_y = self._labels_of(inner, t, True, rng)
        return (self._take(up), up_y), (self._take(inner), in_y)

    def _too_few_kept(self, t: int, kept: int, draws: int, keep: Sequence[float]) -> None:
        # As the CLI's sampler (client/data/drift_stream.cc): bounded, and says why.
        mean = sum(keep[label] for label in self._labels) / len(self._labels)
        phase = min((t - 1) // self.phase_steps, len(self.imbalance) - 1)
        raise ValueError(
            "step %d: the class-imbalance sampler kept %d of %d rows in %d draws: with rho = %g "
            "(class i kept w.p. rho^i) and %d classes a row is kept w.p. %.3g on average; if y "
            "holds regression targets, pass them as floats, else imbalance=() (balanced) or "
            "rhos closer to 1" % (t, kept, self.rows_per_step, draws, self.imbalance[phase],
                                  self.classes, mean))

    def _labels_of(self, rows: Sequence[int], t: int, noisy: bool, rng: Rng) -> np.ndarray:
        if not self.labelled:
            return self.y[rows]
        p = self.noise_probability(t) if noisy else 0.0
        out = []
        for i in rows:
            label = self._labels[i]
            if p > 0.0 and rng.uniform01() < p:
                label = rng.uniform_below(self.classes)
            out.append(label)
        return np.asarray(out, dtype=np.int64)

    def _take(self, rows: Sequence[int]) -> Any:
        return self.features[np.asarray(rows, dtype=np.int64)]

    def steps(self, first: int = 1, last: Optional[int] = None) -> Iterator[Tuple[Any, Any]]:
        """Steps first..last (endless without `last`), each (upper, inner)."""
        t = first
        while last is None or t <= last:
            yield self[t]
            t += 1

    def __iter__(self) -> Iterator[Tuple[Any, Any]]:
        return self.steps()
