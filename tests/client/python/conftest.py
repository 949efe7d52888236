"""Fixtures for the f2obo Python package tests.

The binaries come from ctest (tests/CMakeLists.txt) as options or
environment variables; the package under test is the one built by the
CMake target f2obo_python (<build>/python on PYTHONPATH), i.e. what
`pip install ./client/python` gives a user.
"""
import os
import socket
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_process import ServerProcess  # noqa: E402

import f2obo  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--server-binary", default=os.environ.get("F2OBO_SERVER_BINARY"))
    parser.addoption("--cli-binary", default=os.environ.get("F2OBO_CLI_BINARY"))
    parser.addoption("--source-dir", default=os.environ.get("F2OBO_SOURCE_DIR"))


def _required(config, name):
    value = config.getoption(name)
    if not value:
        pytest.fail("%s is required (ctest passes it)" % name)
    return value


@pytest.fixture(scope="session")
def server_binary(pytestconfig):
    return _required(pytestconfig, "--server-binary")


@pytest.fixture(scope="session")
def cli_binary(pytestconfig):
    return _required(pytestconfig, "--cli-binary")


@pytest.fixture(scope="session")
def source_dir(pytestconfig):
    return _required(pytestconfig, "--source-dir")


@pytest.fixture
def start_server(server_binary, tmp_path):
    """start_server(*flags, data_dir=None) -> a ServerProcess, closed after the test."""
    started = []

    def start(*flags, data_dir=None):
        s = ServerProcess(server_binary, data_dir or str(tmp_path / ("data%d" % len(started))),
                          flags)
        started.append(s)
        return s

    yield start
    for s in started:
        s.close()


@pytest.fixture(scope="module")
def server(server_binary, tmp_path_factory):
    """One server for a test module."""
    s = ServerProcess(server_binary, str(tmp_path_factory.mktemp("server") / "data"))
    yield s
    assert s.stop() == 0, s.stderr()  # SIGTERM: a graceful shutdown exits 0
    s.close()


@pytest.fixture(scope="module")
def client(server):
    with f2obo.Client(server.address) as c:
        yield c


@pytest.fixture
def free_port():
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
