"""f2obo.torch over real gRPC: the Tuner's trajectory
equals that of an oracle session whose client computes the same network's
derivatives by hand in numpy (to 1e-10, float64), for f2obo and sf2obo
(the server's mini-batch rows), and for the Tuner's defaults (f2obo, no
step size given: the server's automatic steps reach the client as the
recipes' coefficients); the module follows the session's y; the
example's tuned network beats its untuned start on held-out rows.
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

import f2obo
import f2obo.torch

D, H, C, MU0 = 5, 4, 3, 1e-3
COMMON = dict(seed=5, alpha=0.3, beta=0.5, gamma=0.05, inner_steps=3)
BOX_WD, BOX_CW = (0.0, 0.05), (0.5, 2.0)


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(D, H), torch.nn.Tanh(),
                               torch.nn.Linear(H, C)).double()


def train_loss(model, hp, batch):
    X, y = batch
    ce = torch.nn.functional.cross_entropy(model(X), y, reduction="none")
    weights = [p for name, p in model.named_parameters() if name.endswith("weight")]
    decay = sum(hp["wd"][i] * (w * w).sum() for i, w in enumerate(weights))
    ridge = sum((p * p).sum() for p in model.parameters())
    return (hp["cw"][y] * ce).mean() + 0.5 * decay + 0.5 * MU0 * ridge


def val_loss(model, hp, batch):
    X, y = batch
    return torch.nn.functional.cross_entropy(model(X), y)


def by_hand(function, x, theta, X, labels, want_gx, want_gy):
    """The same f / g and gradients, derived by hand: theta = (W1 H x D,
    b1, W2 C x H, b2) row-major (named_parameters' order), x = (wd, cw)."""
    sizes = [H * D, H, C * H, C]
    W1, b1, W2, b2 = np.split(theta, np.cumsum(sizes)[:-1])
    W1, W2 = W1.reshape(H, D), W2.reshape(C, H)
    wd, cw = x[:2], x[2:]
    n = len(labels)
    h = np.tanh(X @ W1.T + b1)
    s = h @ W2.T + b2
    s = s - s.max(axis=1, keepdims=True)
    logp = s - np.log(np.exp(s).sum(axis=1, keepdims=True))
    ce = -logp[np.arange(n), labels]
    w = cw[labels] if function == "g" else np.ones(n)
    value = (w * ce).mean()
    ds = np.exp(logp)
    ds[np.arange(n), labels] -= 1.0
    ds *= (w / n)[:, None]
    da = (ds @ W2) * (1.0 - h * h)
    gy = np.concatenate([(da.T @ X).ravel(), da.sum(0), (ds.T @ h).ravel(), ds.sum(0)])
    gx = np.zeros(len(x))
    if function == "g":
        value += 0.5 * (wd[0] * (W1 ** 2).sum() + wd[1] * (W2 ** 2).sum())
        value += 0.5 * MU0 * theta @ theta
        gy += MU0 * theta
        gy[:H * D] += wd[0] * W1.ravel()
        gy[H * D + H:H * D + H + C * H] += wd[1] * W2.ravel()
        gx[:2] = 0.5 * (W1 ** 2).sum(), 0.5 * (W2 ** 2).sum()
        gx[2:] = np.bincount(labels, weights=ce, minlength=C) / n
    return value, gx if want_gx else None, gy if want_gy else None


def steps(count, rows=24, seed=2):
    rng = np.random.default_rng(seed)
    means = rng.normal(size=(C, D))
    out = []
    for _ in range(count):
        pair = []
        for _ in range(2):
            y = rng.integers(0, C, rows)
            pair.append((means[y] + rng.normal(size=(rows, D)), y))
        out.append(pair)
    return out


STEPS = steps(8)
X0 = np.concatenate([np.full(2, 0.01), np.ones(C)])
BOX = (np.concatenate([np.full(2, BOX_WD[0]), np.full(C, BOX_CW[0])]),
       np.concatenate([np.full(2, BOX_WD[1]), np.full(C, BOX_CW[1])]))


# The Tuner's defaults: no algorithm (f2obo) and no step size.
DEFAULTS = dict(seed=5, inner_steps=3)


def tuner(client, algorithm):
    hp = {"wd": f2obo.torch.Hyperparameter(torch.tensor(X0[:2]), box=BOX_WD),
          "cw": f2obo.torch.Hyperparameter(torch.tensor(X0[2:]), box=BOX_CW)}
    if algorithm == "defaults":
        return f2obo.torch.Tuner(client, mlp(), hp, train_loss, val_loss, **DEFAULTS)
    return f2obo.torch.Tuner(client, mlp(), hp, train_loss, val_loss, algorithm=algorithm,
                             **COMMON)


def as_torch(batch):
    X, y = batch
    return torch.from_numpy(X), torch.from_numpy(y)


@pytest.mark.parametrize("algorithm", ["f2obo", "sf2obo", "defaults"])
def test_tuner_follows_a_hand_derived_client(start_server, algorithm):
    server = start_server()
    with f2obo.Client(server.address) as client:
        theta0 = np.concatenate([p.detach().numpy().ravel() for p in mlp().parameters()])
        options = dict(algorithm=algorithm, **COMMON)
        if algorithm == "defaults":
            options = dict(algorithm="f2obo", **DEFAULTS)
        ref = client.create_session(family="oracle", x_dim=len(X0), y_dim=len(theta0),
                                    x0=X0, y0=theta0, box=BOX, **options)
        with tuner(client, algorithm) as tuned, f2obo.OracleStream(client, ref.id) as stream:
            # y comes with each step's reply: step() never reads the decision
            tuned.sync = lambda: pytest.fail("Tuner.step asked for the decision")
            for upper, inner in STEPS:
                def evaluate(q, upper=upper, inner=inner):
                    X, labels = upper if q.function == "f" else inner
                    if q.rows is not None:
                        X, labels = X[q.rows], labels[q.rows]
                    return by_hand(q.function, q.x, q.y, X, labels, q.want_grad_x,
                                   q.want_grad_y)
                expected = stream.step(evaluate, upper_rows=len(upper[1]),
                                       inner_rows=len(inner[1]))
                got = tuned.step(as_torch(upper), as_torch(inner))
                assert got.t == expected.t
                np.testing.assert_allclose(got.x, expected.x, rtol=0, atol=1e-10)
                assert abs(got.upper_loss_before - expected.upper_loss_before) <= 1e-10
                # the module's weights are the session's y after each step
                y = tuned.session.decision().y
                theta = np.concatenate([p.detach().numpy().ravel()
                                        for p in tuned.model.parameters()])
                np.testing.assert_array_equal(theta, y)
            assert not np.allclose(got.x, X0)  # the hyperparameters moved
            a, b = tuned.session.decision(), ref.decision()
            assert a.t == b.t == len(STEPS) + 1
            np.testing.assert_allclose(a.y, b.y, rtol=0, atol=1e-10)
            np.testing.assert_allclose(tuned.hparams["cw"].numpy(), a.x[2:], rtol=0, atol=0)


def test_a_second_tuner_resumes_the_session(start_server):
    server = start_server()
    with f2obo.Client(server.address) as client:
        with tuner(client, "f2obo") as first:
            for upper, inner in STEPS[:3]:
                first.step(as_torch(upper), as_torch(inner))
            sid = first.session.id
            after3 = first.session.decision()
        hp = {"wd": f2obo.torch.Hyperparameter(torch.zeros(2)),
              "cw": f2obo.torch.Hyperparameter(torch.zeros(C))}
        with f2obo.torch.Tuner(client, mlp(), hp, train_loss, val_loss, session_id=sid,
                               resume=True) as second:
            np.testing.assert_array_equal(second.hparams["wd"].numpy(), after3.x[:2])
            theta = np.concatenate([p.detach().numpy().ravel()
                                    for p in second.model.parameters()])
            np.testing.assert_array_equal(theta, after3.y)
            assert second.step(as_torch(STEPS[3][0]), as_torch(STEPS[3][1])).t == 4


def test_a_simplex_must_be_the_only_hyperparameter(start_server):
    server = start_server()
    with f2obo.Client(server.address) as client:
        hp = {"a": f2obo.torch.Hyperparameter(torch.ones(2) / 2, simplex=1.0),
              "b": torch.zeros(1)}
        with pytest.raises(ValueError, match="'a' is a simplex"):
            f2obo.torch.Tuner(client, mlp(), hp, train_loss, val_loss, algorithm="f2obo",
                              **COMMON)


def test_example_tuned_network_beats_the_untuned_start(server, source_dir):
    path = os.path.join(source_dir, "examples", "python", "tune_torch_mlp.py")
    r = subprocess.run([sys.executable, path, "--quick", "--server=" + server.address],
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    loss = dict(re.findall(r"^(untuned|tuned)\s+([0-9.]+)\s", r.stdout, re.M))
    assert float(loss["tuned"]) < float(loss["untuned"]), r.stdout
