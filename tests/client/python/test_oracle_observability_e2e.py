"""What an oracle session shows on a real server's /metrics: the Tuner's
hyperparameters under their dict's names (f2obo_session_hyperparameter,
each group's mean of the decision after the step), and every series
docs/oracle.md's "Metrics" section promises an oracle session; bad names
are refused at create, naming the field.
"""
import os
import re
import urllib.request

import numpy as np
import pytest
import torch

import f2obo
import f2obo.torch

D, C = 4, 3


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        return r.read().decode()


def series(text, metric, **labels):
    """The value of series `metric` with exactly these labels (None: absent)."""
    for line in text.splitlines():
        m = re.match(r"^%s\{([^}]*)\} (\S+)$" % re.escape(metric), line)
        if m and dict(re.findall(r'(\w+)="([^"]*)"', m.group(1))) == labels:
            return float(m.group(2))
    return None


def train_loss(model, hp, batch):
    X, y = batch
    ce = torch.nn.functional.cross_entropy(model(X), y)
    return ce + 0.5 * hp["weight_decay"] * sum((p * p).sum() for p in model.parameters()) \
        + 0.5 * (hp["class_weight"] ** 2).sum() * 1e-3


def val_loss(model, hp, batch):
    X, y = batch
    return torch.nn.functional.cross_entropy(model(X), y)


def batches(rng, rows=16):
    y = rng.integers(0, C, rows)
    X = rng.normal(size=(rows, D)) + y[:, None]
    return torch.from_numpy(X), torch.from_numpy(y)


def documented_series(source_dir):
    """The f2obo_session_* names docs/oracle.md's Metrics section lists."""
    with open(os.path.join(source_dir, "docs", "oracle.md")) as f:
        text = f.read()
    section = text.split("## Metrics", 1)[1].split("\n## ", 1)[0]
    return sorted(set(re.findall(r"`(f2obo_session_\w+)", section)))


def test_hyperparameters_are_named_series_and_the_documented_ones_exist(start_server,
                                                                        source_dir):
    server = start_server()
    torch.manual_seed(0)
    model = torch.nn.Linear(D, C).double()
    hp = {"weight_decay": f2obo.torch.Hyperparameter(torch.tensor(0.01), box=(0.0, 0.1)),
          "class_weight": f2obo.torch.Hyperparameter(torch.tensor([0.2, 0.4]),
                                                     box=(0.0, 1.0))}
    rng = np.random.default_rng(4)
    with f2obo.Client(server.address) as client:
        with f2obo.torch.Tuner(client, model, hp, train_loss, val_loss, algorithm="f2obo",
                               session_id="tuned", alpha=0.2, beta=0.3, gamma=0.5) as tuner:
            spec = tuner.session.info().spec
            assert [(g.name, g.size) for g in spec.x_groups] == \
                [("weight_decay", 1), ("class_weight", 2)]
            for _ in range(4):
                last = tuner.step(batches(rng), batches(rng))
        x = np.asarray(last.x)
        assert not np.allclose(x, [0.01, 0.2, 0.4])  # they moved: the test can tell
        text = scrape(server.metrics_port)
        # Published once the step's metrics are (off the request path).
        for _ in range(100):
            if series(text, "f2obo_session_step", session_id="tuned") == 4:
                break
            text = scrape(server.metrics_port)
        assert series(text, "f2obo_session_hyperparameter", session_id="tuned",
                      name="weight_decay") == x[0]
        got = series(text, "f2obo_session_hyperparameter", session_id="tuned",
                     name="class_weight")
        assert got == pytest.approx((x[1] + x[2]) / 2, rel=0, abs=1e-15)
        promised = documented_series(source_dir)
        assert len(promised) >= 8, promised
        missing = [n for n in promised if series(text, n, session_id="tuned") is None and
                   n != "f2obo_session_hyperparameter"]
        assert not missing, "docs/oracle.md promises %s, not exported" % missing
        # The exact metrics are absent, not 0.
        for absent in ("f2obo_session_blreg", "f2obo_session_regret_term"):
            assert series(text, absent, session_id="tuned") is None, absent


@pytest.mark.parametrize("groups, message", [
    ([{"name": "a", "size": 1}, {"name": "b", "size": 1}], "sum to 2, x has 3 entries"),
    ([{"name": "a", "size": 2}, {"name": "a", "size": 1}], "names an earlier group too"),
    ([{"name": "", "size": 3}], "printable ASCII"),
    ([{"name": "a", "size": 0}, {"name": "b", "size": 3}], "must be >= 1"),
])
def test_bad_x_groups_are_refused_at_create(start_server, groups, message):
    server = start_server()
    with f2obo.Client(server.address) as client:
        with pytest.raises(f2obo.errors.InvalidArgument, match="spec.x_groups") as e:
            client.create_session(family="oracle", x_dim=3, y_dim=2, session_id="bad",
                                  algorithm="f2obo", alpha=0.1, beta=0.1, x_groups=groups)
        assert message in str(e.value)
        assert client.list_sessions() == []
