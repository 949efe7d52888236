"""numpy and scipy.sparse inputs give the same session as the C++ CLI on
the same data, bit for bit.

The data is written to a file (CSV for dense rows, LibSVM for sparse ones,
every number printed with repr so it parses back to the same double);
f2obo-cli streams the file into one session, the Python package streams
the arrays into another through f2obo.DriftingStream (the CLI's drifting
stream, with imbalance phases, label noise and an uneven split), and the
two sessions must end with identical x, y and counters.
"""
import subprocess

import numpy as np
import pytest
import scipy.sparse

import f2obo
from helpers import same_bits

D, C, ROWS, STEPS = 9, 4, 700, 24
DRIFT = dict(rows_per_step=40, upper_fraction=0.4, imbalance=(0.6, 0.9), phase_steps=10,
             label_noise={12: 0.3}, seed=3)
CLI_DRIFT = ["--rows_per_step=40", "--upper_fraction=0.4", "--imbalance=0.6,0.9",
             "--phase_steps=10", "--label_noise=12:0.3", "--seed=3"]


def data(sparse):
    rng = np.random.default_rng(17)
    y = rng.integers(0, C, size=ROWS)
    X = rng.normal(size=(ROWS, D)) / 3 + 0.25 * (y[:, None] == np.arange(D) % C)
    if sparse:
        X[rng.random(size=X.shape) < 0.6] = 0.0
        X[0, D - 1] = 0.5  # so the file's largest index is D
        return scipy.sparse.csr_matrix(X), y
    return X, y


def write(path, X, y):
    with open(path, "w") as f:
        if scipy.sparse.issparse(X):  # LibSVM: label, then increasing 1-based index:value
            for r in range(X.shape[0]):
                row = X.getrow(r)
                f.write("%d %s\n" % (y[r], " ".join(
                    "%d:%r" % (j + 1, float(v)) for j, v in zip(row.indices, row.data))))
        else:
            for r in range(X.shape[0]):
                f.write(",".join(repr(float(v)) for v in X[r]) + ",%d\n" % y[r])


def cli(binary, *args):
    r = subprocess.run([binary] + list(args), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


@pytest.mark.parametrize("sparse,algorithm", [(False, "sf2obo"), (True, "sf2obo"),
                                              (False, "af2obo")])
def test_python_and_cli_sessions_are_identical(server, client, cli_binary, tmp_path, sparse,
                                               algorithm):
    X, y = data(sparse)
    path = tmp_path / ("data.libsvm" if sparse else "data.csv")
    write(path, X, y)
    name = "%s-%s" % ("csr" if sparse else "dense", algorithm)
    target = "--server=" + server.address
    cli(cli_binary, "create", target, "--id=cli-" + name, "--family=logistic_hpo",
        "--features=%d" % D, "--classes=%d" % C, "--algorithm=" + algorithm, "--box=0,0.1",
        "--alpha_auto", "--beta_auto", "--seed=7", "--exact_every=0")
    cli(cli_binary, "stream", target, "--session=cli-" + name, "--data=%s" % path,
        "--steps=%d" % STEPS, *CLI_DRIFT)

    session = client.create_session(session_id="py-" + name, family="logistic_hpo",
                                    features=D, classes=C, algorithm=algorithm, box=(0.0, 0.1),
                                    alpha_auto=True, beta_auto=True, seed=7, exact_every=0)
    stream = f2obo.DriftingStream(X, y, **DRIFT)
    results = list(session.stream(stream.steps(1, STEPS)))
    assert [r.t for r in results] == list(range(1, STEPS + 1))
    (upper, _), _ = stream[1]
    assert scipy.sparse.issparse(upper) == sparse  # sparse rows were sent as CSR

    theirs = client.session("cli-" + name)
    a, b = session.decision(), theirs.decision()
    assert a.t == b.t == STEPS + 1
    assert same_bits(a.x, b.x) and same_bits(a.y, b.y)
    assert same_bits(results[-1].x, b.x)
    mine, cli_info = session.info(), theirs.info()
    assert (mine.inner_iterations, mine.rows_processed) == \
        (cli_info.inner_iterations, cli_info.rows_processed)
    assert a.lambda_ == b.lambda_
    assert np.any(a.x != 0)  # the decision moved


# A family's defaults (its feasible set above all) live in
# one place, the server's, so a session created from Python with only the
# family, the algorithm and the dimensions works and is the CLI's session.
@pytest.mark.parametrize("family,dims,box", [
    ("ridge_hpo", dict(features=4), ([0.0], [1.0])),
    ("logistic_hpo", dict(features=4, classes=3), ([0.0], [0.1])),
    ("quadratic", dict(x_dim=2, y_dim=3), None),
])
def test_family_defaults_are_the_servers_for_python_and_the_cli(server, client, cli_binary,
                                                                family, dims, box):
    session = client.create_session(session_id="py-" + family, family=family,
                                    algorithm="f2obo", **dims)
    cli(cli_binary, "create", "--server=" + server.address, "--id=cli-" + family,
        "--family=" + family, "--algorithm=f2obo",
        *["--%s=%d" % kv for kv in dims.items()])
    mine = session.info().spec.proto
    theirs = client.get_session("cli-" + family).spec.proto
    if box is None:
        assert mine.constraint.unconstrained
    else:
        assert (list(mine.constraint.box.lo), list(mine.constraint.box.hi)) == box
    assert mine == theirs  # every default, filled in by the server, the same
