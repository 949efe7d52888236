"""Data and comparisons shared by the Python tests."""
import numpy as np


def classification_data(rows, features, classes, seed):
    """A learnable classification set: feature j leans towards class j % classes."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, size=rows)
    X = rng.normal(size=(rows, features))
    for j in range(features):
        X[:, j] += 0.8 * (y == j % classes)
    return X, y


def batches(X, y, rows_per_step, steps, seed=0):
    """`steps` (upper, inner) pairs of random rows of (X, y), halves each."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        idx = rng.choice(len(y), size=rows_per_step, replace=False)
        h = rows_per_step // 2
        out.append(((X[idx[:h]], y[idx[:h]]), (X[idx[h:]], y[idx[h:]])))
    return out


def same_bits(a, b):
    """Bit-for-bit equality of two float arrays (NaN payloads, -0.0 included)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and a.tobytes() == b.tobytes()
