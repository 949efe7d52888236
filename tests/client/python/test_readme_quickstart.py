"""The README's Python install and example (f2obo.torch on the user's own
network), run as written.

Both are taken from README.md between their markers, so the README cannot
drift from what works: the install block runs in a copy of client/python
and proto/ with HOME set to a temporary directory (it makes a virtual
environment under ~ and pip installs the package into it, generating the
stubs), then the quick start runs with that environment's python against a
real server, its one address replaced by the server's (the venv sees
Debian's torch through --system-site-packages).
"""
import os
import re
import shutil
import subprocess

import pytest

ADDRESS = "127.0.0.1:50051"


def block(source_dir, name):
    with open(os.path.join(source_dir, "README.md")) as f:
        readme = f.read()
    m = re.search(r"<!-- %s:begin -->\s*```\w*\n(.*?)```\s*<!-- %s:end -->" % (name, name),
                  readme, re.S)
    assert m, "README.md has no %s block" % name
    return m.group(1)


@pytest.fixture(scope="module")
def venv_python(source_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("checkout")
    shutil.copytree(os.path.join(source_dir, "client", "python"), root / "client" / "python",
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "v1"))
    shutil.copytree(os.path.join(source_dir, "proto"), root / "proto")
    home = root / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home))
    env.pop("PYTHONPATH", None)  # the test's own package must not leak in
    install = subprocess.run(["bash", "-ec", block(source_dir, "python-install")], cwd=root,
                             env=env, capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stdout + install.stderr
    pythons = [p for p in (home / ".venvs").glob("*/bin/python")]
    assert len(pythons) == 1, "the install block should make one virtual environment"
    return str(pythons[0]), env


def test_quick_start_runs_as_written(source_dir, server, venv_python):
    python, env = venv_python
    code = block(source_dir, "python-quickstart")
    assert code.count(ADDRESS) == 1
    assert len(code.strip().splitlines()) <= 25, "the README's example should stay short"
    r = subprocess.run([python, "-c", code.replace(ADDRESS, server.address)], env=env,
                       capture_output=True, text=True, timeout=120, cwd="/")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert [int(l.split()[0]) for l in lines] == [10, 20, 30]
    # The tuned weight decay stays in its box [0, 0.1].
    assert all(0.0 <= float(l.split()[1]) <= 0.1 for l in lines), r.stdout


def test_the_installed_package_has_stubs_from_this_proto(source_dir, venv_python):
    python, env = venv_python
    r = subprocess.run([python, "-c", "import f2obo, os; print(os.path.dirname(f2obo.__file__))"],
                       env=env, capture_output=True, text=True, timeout=60, cwd="/")
    assert r.returncode == 0, r.stderr
    installed = r.stdout.strip()
    assert installed.startswith(env["HOME"])  # from the environment, not the build tree
    build = os.path.dirname(__import__("f2obo").__file__)
    for name in ("f2obo_pb2.py", "f2obo_pb2_grpc.py"):
        with open(os.path.join(installed, "v1", name), "rb") as a, \
                open(os.path.join(build, "v1", name), "rb") as b:
            assert a.read() == b.read(), name
